#include "answer_watch.h"

void sqlq_answer_watch_init(sqlq_answer_watch *w)
{
    atomic_init(&w->waiting, 0);
    atomic_init(&w->since_ms, 0);
}

void sqlq_answer_watch_started(sqlq_answer_watch *w, uint64_t now_ms)
{
    if (atomic_fetch_add(&w->waiting, 1) == 0)
        atomic_store(&w->since_ms, now_ms);
}

void sqlq_answer_watch_finished(sqlq_answer_watch *w, uint64_t now_ms)
{
    atomic_store(&w->since_ms, now_ms);
    uint_fast64_t n = atomic_load(&w->waiting);
    while (n > 0 && !atomic_compare_exchange_weak(&w->waiting, &n, n - 1)) {
    }
}

uint64_t sqlq_answer_watch_silent_ms(sqlq_answer_watch *w, uint64_t now_ms)
{
    if (atomic_load(&w->waiting) == 0)
        return 0;
    uint64_t since = atomic_load(&w->since_ms);
    return now_ms > since ? now_ms - since : 0;
}
