/* answer_watch: how long requests to a service have waited without any answer, written by the
 * threads that send them and read by another (a /readyz probe), lock-free. */
#ifndef SQLQ_ANSWER_WATCH_H
#define SQLQ_ANSWER_WATCH_H

#include <stdatomic.h>
#include <stdint.h>

/* Shared by every client of one service. A request counts from its start until it finishes
 * (an answer of any status, a network failure or an abort). */
typedef struct sqlq_answer_watch {
    atomic_uint_fast64_t waiting; /* requests started and not finished */
    atomic_uint_fast64_t since_ms; /* monotonic ms: the last finish, or the start that found none waiting */
} sqlq_answer_watch;

void sqlq_answer_watch_init(sqlq_answer_watch *w);
/* A request was sent at now_ms (monotonic). */
void sqlq_answer_watch_started(sqlq_answer_watch *w, uint64_t now_ms);
/* A request finished at now_ms. */
void sqlq_answer_watch_finished(sqlq_answer_watch *w, uint64_t now_ms);
/* How long requests have been waiting with none finished: 0 when none waits. */
uint64_t sqlq_answer_watch_silent_ms(sqlq_answer_watch *w, uint64_t now_ms);

#endif
