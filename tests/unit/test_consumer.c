/* The consumer runtime against an in-memory queue (the transport seam): poison after five
 * attempts, poison on receipt, undecodable text, renewal with the latest pop receipt, ownership
 * loss, batch/threshold concurrency, the polling intervals on an injected clock, message timeout
 * and graceful stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "consumer.h"
#include "fake_clock.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- an in-memory queue service with visibility, dequeue counts and pop receipts ---- */

#define FQ_MAX 256

typedef struct fq_msg {
    char id[32];
    char *text;
    size_t len;
    long dq;
    uint64_t visible_at;
    char receipt[32];
    bool gone;
} fq_msg;

typedef struct fq_queue {
    char name[64];
    fq_msg msgs[FQ_MAX];
    size_t n;
} fq_queue;

typedef struct fake_q {
    pthread_mutex_t mu;
    fq_queue q[4];
    size_t nq;
    int seq;
    sqlq_result renew_result; /* returned for updates with visibility > 0 (renewals) */
    int gets, deletes, releases, renewals, puts, creates;
    bool main_missing;        /* get answers 404 while set */
    bool empty_until_cleared; /* get returns nothing while set */
    bool overfill;            /* get returns one message more than asked for */
    int delete_status;        /* deletes fail with this HTTP status (and code) when set */
    char delete_code[64];
} fake_q;

static uint64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static fq_queue *fq_find(fake_q *f, const char *name, bool create)
{
    for (size_t i = 0; i < f->nq; i++)
        if (strcmp(f->q[i].name, name) == 0)
            return &f->q[i];
    if (!create || f->nq == 4)
        return NULL;
    fq_queue *q = &f->q[f->nq++];
    memset(q, 0, sizeof(*q));
    snprintf(q->name, sizeof(q->name), "%s", name);
    return q;
}

static void fq_add(fake_q *f, const char *queue, const char *text, long dq)
{
    fq_queue *q = fq_find(f, queue, true);
    fq_msg *m = &q->msgs[q->n++];
    memset(m, 0, sizeof(*m));
    snprintf(m->id, sizeof(m->id), "id-%d", ++f->seq);
    m->text = strdup(text);
    m->len = strlen(text);
    m->dq = dq;
}

static size_t fq_live(fake_q *f, const char *queue)
{
    pthread_mutex_lock(&f->mu);
    fq_queue *q = fq_find(f, queue, false);
    size_t n = 0;
    for (size_t i = 0; q && i < q->n; i++)
        n += !q->msgs[i].gone;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void fq_free(fake_q *f)
{
    for (size_t i = 0; i < f->nq; i++)
        for (size_t j = 0; j < f->q[i].n; j++)
            free(f->q[i].msgs[j].text);
}

static sqlq_result t_open(void *ctx, sqlq_conn_role role, void **out, sqlq_error *err)
{
    (void)role;
    (void)err;
    *out = ctx;
    return SQLQ_OK;
}
static void t_close(void *conn) { (void)conn; }

static sqlq_result t_get(void *conn, const char *queue, int count, int vis, sqlq_message_list *out,
                         sqlq_error *err)
{
    fake_q *f = conn;
    pthread_mutex_lock(&f->mu);
    f->gets++;
    if (f->main_missing) {
        pthread_mutex_unlock(&f->mu);
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "QueueNotFound");
    }
    fq_queue *q = fq_find(f, queue, false);
    size_t cap = (size_t)count + (f->overfill ? 1u : 0u);
    out->items = calloc(cap, sizeof(sqlq_message));
    out->count = 0;
    uint64_t now = real_ms();
    for (size_t i = 0; q && !f->empty_until_cleared && i < q->n && out->count < cap; i++) {
        fq_msg *m = &q->msgs[i];
        if (m->gone || m->visible_at > now)
            continue;
        m->dq++;
        m->visible_at = now + (uint64_t)vis * 1000u;
        snprintf(m->receipt, sizeof(m->receipt), "r%d", ++f->seq);
        sqlq_message *o = &out->items[out->count++];
        o->id = strdup(m->id);
        o->pop_receipt = strdup(m->receipt);
        o->text = strdup(m->text);
        o->text_len = m->len;
        o->dequeue_count = m->dq;
        o->insertion_time = 1714564800; /* 2024-05-01T12:00:00Z */
    }
    pthread_mutex_unlock(&f->mu);
    return SQLQ_OK;
}

static fq_msg *fq_owned(fake_q *f, const char *queue, const char *id, const char *receipt,
                        sqlq_result *r, sqlq_error *err)
{
    fq_queue *q = fq_find(f, queue, false);
    for (size_t i = 0; q && i < q->n; i++) {
        fq_msg *m = &q->msgs[i];
        if (m->gone || strcmp(m->id, id) != 0)
            continue;
        if (strcmp(m->receipt, receipt) != 0) {
            *r = sqlq_error_set(err, SQLQ_E_POP_RECEIPT, false, "PopReceiptMismatch");
            return NULL;
        }
        return m;
    }
    *r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "MessageNotFound");
    return NULL;
}

static sqlq_result t_update(void *conn, const char *queue, const char *id, const char *receipt,
                            int vis, char **out_receipt, sqlq_error *err)
{
    fake_q *f = conn;
    sqlq_result r = SQLQ_OK;
    pthread_mutex_lock(&f->mu);
    if (vis > 0 && f->renew_result != SQLQ_OK) {
        r = sqlq_error_set(err, f->renew_result, false, "injected renewal failure");
        pthread_mutex_unlock(&f->mu);
        return r;
    }
    fq_msg *m = fq_owned(f, queue, id, receipt, &r, err);
    if (m) {
        m->visible_at = real_ms() + (uint64_t)vis * 1000u;
        snprintf(m->receipt, sizeof(m->receipt), "r%d", ++f->seq);
        *out_receipt = strdup(m->receipt);
        if (vis > 0)
            f->renewals++;
        else
            f->releases++;
    }
    pthread_mutex_unlock(&f->mu);
    return r;
}

static sqlq_result t_remove(void *conn, const char *queue, const char *id, const char *receipt,
                            sqlq_error *err)
{
    fake_q *f = conn;
    sqlq_result r = SQLQ_OK;
    pthread_mutex_lock(&f->mu);
    if (f->delete_status) {
        r = sqlq_error_set(err, SQLQ_E_HTTP, false, "injected delete failure");
        err->http_status = f->delete_status;
        snprintf(err->azure_code, sizeof(err->azure_code), "%s", f->delete_code);
        pthread_mutex_unlock(&f->mu);
        return r;
    }
    fq_msg *m = fq_owned(f, queue, id, receipt, &r, err);
    if (m) {
        m->gone = true;
        f->deletes++;
    }
    pthread_mutex_unlock(&f->mu);
    return r;
}

static sqlq_result t_put(void *conn, const char *queue, const char *text, size_t len, sqlq_error *err)
{
    fake_q *f = conn;
    pthread_mutex_lock(&f->mu);
    fq_queue *q = fq_find(f, queue, false);
    if (!q) {
        pthread_mutex_unlock(&f->mu);
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "QueueNotFound");
    }
    char *copy = strndup(text, len);
    fq_add(f, queue, copy, 0);
    free(copy);
    f->puts++;
    pthread_mutex_unlock(&f->mu);
    return SQLQ_OK;
}

static sqlq_result t_create(void *conn, const char *queue, sqlq_error *err)
{
    (void)err;
    fake_q *f = conn;
    pthread_mutex_lock(&f->mu);
    fq_find(f, queue, true);
    f->creates++;
    pthread_mutex_unlock(&f->mu);
    return SQLQ_OK;
}

static sqlq_consumer_transport fake_transport(fake_q *f)
{
    sqlq_consumer_transport t = {t_open, t_close, t_get, t_update, t_remove, t_put, t_create, f};
    return t;
}

/* ---- handlers ---- */

typedef struct hstate {
    pthread_mutex_t mu;
    int calls;
    int running, max_running;
    int sleep_ms;          /* work time */
    bool fail;             /* always fail */
    bool wait_for_cancel;  /* run until cancelled */
    bool saw_cancel;
    char last_body[256];
    long last_dq;
    char last_iso[32];
    sqlq_stop *stop_after; /* set this flag once calls reaches stop_at */
    int stop_at;
    int unavailable_for;   /* answer SQLQ_E_UNAVAILABLE to this many calls first */
    long last_attempt;
} hstate;

static sqlq_result handler(void *ctx, const sqlq_received *d, sqlq_error *err)
{
    hstate *h = ctx;
    pthread_mutex_lock(&h->mu);
    h->calls++;
    h->running++;
    if (h->running > h->max_running)
        h->max_running = h->running;
    snprintf(h->last_body, sizeof(h->last_body), "%.*s", (int)d->body_len, d->body);
    h->last_dq = d->dequeue_count;
    h->last_attempt = d->attempt;
    bool down = h->unavailable_for > 0;
    if (down)
        h->unavailable_for--;
    sqlq_received_insertion_iso(d, h->last_iso, sizeof(h->last_iso));
    if (h->stop_after && h->calls >= h->stop_at)
        *h->stop_after = 1;
    pthread_mutex_unlock(&h->mu);
    if (h->sleep_ms)
        usleep((useconds_t)h->sleep_ms * 1000u);
    bool cancelled = false;
    while (h->wait_for_cancel && !(cancelled = sqlq_received_cancelled(d)))
        usleep(5000);
    pthread_mutex_lock(&h->mu);
    h->running--;
    h->saw_cancel = h->saw_cancel || cancelled;
    pthread_mutex_unlock(&h->mu);
    if (down)
        return sqlq_error_set(err, SQLQ_E_UNAVAILABLE, true, "target down");
    if (h->fail || cancelled)
        return sqlq_error_set(err, SQLQ_E_IO, false, "%s", cancelled ? "cancelled" : "boom");
    return SQLQ_OK;
}

/* ---- a run in a thread, with a stop flag ---- */

typedef struct run_ctx {
    fake_q f;
    hstate h;
    sqlq_consumer_transport t;
    sqlq_consumer_options o;
    sqlq_consumer *c;
    sqlq_stop stop;
    sqlq_result result;
    sqlq_consumer_stats stats;
} run_ctx;

static void setup_run(run_ctx *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->f.mu, NULL);
    pthread_mutex_init(&r->h.mu, NULL);
    fq_find(&r->f, "orders", true);
    r->t = fake_transport(&r->f);
    sqlq_consumer_options_default(&r->o);
    r->o.transport = &r->t;
    r->o.stop = &r->stop;
    r->o.min_polling_ms = 1;
    r->o.max_polling_ms = 5;
    r->o.encoding = SQLQ_ENCODING_PLAIN;
}

static void run_consumer(run_ctx *r)
{
    sqlq_handler h = {.handle = handler, .ctx = &r->h};
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_consumer_create(NULL, NULL, "orders", &r->o, &h, &r->c, &err), SQLQ_OK);
    r->result = sqlq_consumer_run(r->c, &err);
    sqlq_consumer_get_stats(r->c, &r->stats);
    sqlq_consumer_destroy(r->c);
}

static void teardown_run(run_ctx *r) { fq_free(&r->f); }

/* ---- tests ---- */

static void test_consumer_failing_message_poisoned_after_five(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "{\"n\":1}", 0);
    r.h.fail = true;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.h.calls, 5);
    assert_int_equal(r.h.last_dq, 5);
    assert_int_equal(r.stats.failed, 5);
    assert_int_equal(r.stats.released, 4);
    assert_int_equal(r.stats.poisoned, 1);
    assert_int_equal(fq_live(&r.f, "orders"), 0);
    assert_int_equal(fq_live(&r.f, "orders-poison"), 1);
    fq_queue *p = fq_find(&r.f, "orders-poison", false);
    assert_string_equal(p->msgs[0].text, "{\"n\":1}");
    assert_int_equal(r.f.creates, 1); /* created on 404 */
    teardown_run(&r);
}

static void test_consumer_over_limit_on_receipt_goes_to_poison(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "late", 5); /* the next get makes it 6 */
    fq_find(&r.f, "orders-poison", true);
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.h.calls, 0);
    assert_int_equal(r.stats.poisoned, 1);
    assert_int_equal(fq_live(&r.f, "orders"), 0);
    assert_int_equal(fq_live(&r.f, "orders-poison"), 1);
    assert_int_equal(r.f.creates, 0);
    teardown_run(&r);
}

static void test_consumer_undecodable_goes_to_poison_at_once(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    r.o.encoding = SQLQ_ENCODING_BASE64;
    fq_add(&r.f, "orders", "{\"plain\": \"json, not base64\"}", 0);
    fq_add(&r.f, "orders", "aGVsbG8=", 0); /* "hello" */
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.h.calls, 1);
    assert_string_equal(r.h.last_body, "hello");
    assert_string_equal(r.h.last_iso, "2024-05-01T12:00:00Z");
    assert_int_equal(r.stats.undecodable, 1);
    assert_int_equal(r.stats.poisoned, 1);
    assert_int_equal(r.stats.succeeded, 1);
    fq_queue *p = fq_find(&r.f, "orders-poison", false);
    assert_non_null(p);
    assert_string_equal(p->msgs[0].text, "{\"plain\": \"json, not base64\"}");
    teardown_run(&r);
}

static void test_consumer_renews_with_latest_receipt(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "slow", 0);
    r.o.lease_s = 1; /* renew every 500 ms */
    r.h.sleep_ms = 1800;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.h.calls, 1);
    assert_true(r.f.renewals >= 3);
    assert_int_equal(r.stats.renewals, (unsigned long long)r.f.renewals);
    /* the delete only succeeds with the receipt of the last renewal */
    assert_int_equal(r.f.deletes, 1);
    assert_int_equal(r.stats.succeeded, 1);
    assert_int_equal(r.stats.ownership_lost, 0);
    teardown_run(&r);
}

static void test_consumer_ownership_lost_is_not_deleted(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "stolen", 0);
    r.f.renew_result = SQLQ_E_POP_RECEIPT;
    r.o.lease_s = 1;
    r.h.sleep_ms = 800;
    r.h.fail = true; /* would release or poison, but must not with a lost receipt */
    r.o.max_dequeue_count = 1;
    r.o.max_messages = 1;
    run_consumer(&r);
    assert_int_equal(r.h.calls, 1);
    assert_int_equal(r.stats.ownership_lost, 1);
    assert_int_equal(r.f.deletes, 0);
    assert_int_equal(r.f.releases, 0);
    assert_int_equal(r.f.puts, 0);
    assert_int_equal(fq_live(&r.f, "orders"), 1);
    teardown_run(&r);
}

static void test_consumer_transient_renewal_failure_retries_sooner(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "flaky", 0);
    r.f.renew_result = SQLQ_E_HTTP;
    r.o.lease_s = 2; /* due at 1 s, then retries every ~250 ms */
    r.h.sleep_ms = 1700;
    r.o.max_messages = 1;
    run_consumer(&r);
    assert_true(r.stats.renewal_failures >= 2);
    assert_int_equal(r.stats.ownership_lost, 0);
    assert_int_equal(r.f.deletes, 1); /* the original receipt is still valid */
    teardown_run(&r);
}

static void test_consumer_batch_and_threshold_bound_concurrency(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    for (int i = 0; i < 40; i++)
        fq_add(&r.f, "orders", "m", 0);
    r.o.batch_size = 4;
    r.o.new_batch_threshold = 2;
    r.h.sleep_ms = 30;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.h.calls, 40);
    assert_int_equal(r.stats.succeeded, 40);
    /* a new batch only when fewer than 2 are in flight: at most 1 + 4 at once */
    assert_true(r.h.max_running <= 5);
    assert_true(r.h.max_running >= 4);
    teardown_run(&r);
}

typedef struct poll_log {
    uint64_t at[64];
    uint64_t delay[64];
    int received[64];
    sqlq_result result[64];
    size_t n;
    size_t stop_at;
    sqlq_stop *stop;
    fake_q *f;
    size_t message_at; /* make a message appear before this poll */
    hstate *h;         /* when set, stop only once the handler ran */
} poll_log;

static void on_poll(void *ctx, const sqlq_poll_event *ev)
{
    poll_log *l = ctx;
    if (l->n < 64) {
        l->at[l->n] = ev->at_ms;
        l->delay[l->n] = ev->next_delay_ms;
        l->received[l->n] = ev->received;
        l->result[l->n] = ev->result;
        l->n++;
    }
    if (l->n + 1 == l->message_at) {
        pthread_mutex_lock(&l->f->mu);
        fq_add(l->f, "orders", "wake", 0);
        pthread_mutex_unlock(&l->f->mu);
    }
    /* Time stands still between fake sleeps: give the worker real time to start the message. */
    for (int i = 0; l->h && ev->received > 0 && i < 2000; i++) {
        pthread_mutex_lock(&l->h->mu);
        bool handled = l->h->calls > 0;
        pthread_mutex_unlock(&l->h->mu);
        if (handled)
            break;
        usleep(1000);
    }
    if (l->n >= l->stop_at)
        *l->stop = 1;
}

static void test_consumer_polling_backoff_on_injected_clock(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fake_clock fc = {.now_ms = 1000}; /* random 0.5: the WebJobs midpoint sequence */
    sqlq_clock clock = fake_clock_make(&fc);
    poll_log log = {.stop_at = 16, .stop = &r.stop, .f = &r.f, .message_at = 13, .h = &r.h};
    r.o.clock = &clock;
    r.o.min_polling_ms = 100;
    r.o.max_polling_ms = 60000;
    r.o.on_poll = on_poll;
    r.o.on_poll_ctx = &log;
    run_consumer(&r);
    assert_int_equal(log.n, 16);
    const uint64_t want[] = {200, 300, 500, 900, 1700, 3300, 6500, 12900, 25700, 51300, 60000, 60000};
    for (size_t i = 0; i < 12; i++) {
        assert_int_equal(log.delay[i], want[i]);
        assert_int_equal(log.at[i + 1] - log.at[i], want[i]); /* the requests really are spaced so */
    }
    /* poll 13 finds the message: no delay, and the back-off starts over */
    assert_int_equal(log.received[12], 1);
    assert_int_equal(log.delay[12], 0);
    assert_int_equal(log.delay[13], 200);
    assert_int_equal(log.delay[14], 300);
    assert_int_equal(r.h.calls, 1);
    teardown_run(&r);
}

static void test_consumer_missing_queue_keeps_polling(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fake_clock fc = {.now_ms = 0};
    sqlq_clock clock = fake_clock_make(&fc);
    poll_log log = {.stop_at = 8, .stop = &r.stop, .f = &r.f};
    r.f.main_missing = true;
    r.o.clock = &clock;
    r.o.min_polling_ms = 100;
    r.o.max_polling_ms = 1000;
    r.o.on_poll = on_poll;
    r.o.on_poll_ctx = &log;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(log.n, 8);
    assert_int_equal(log.result[7], SQLQ_E_NOT_FOUND);
    assert_int_equal(log.delay[0], 200);
    assert_int_equal(log.delay[7], 1000);
    assert_int_equal(r.stats.poll_errors, 8);
    teardown_run(&r);
}

static void test_consumer_message_timeout_cancels(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "hang", 0);
    r.h.wait_for_cancel = true;
    r.o.message_timeout_ms = 200;
    r.o.max_messages = 1;
    run_consumer(&r);
    assert_true(r.h.saw_cancel);
    assert_int_equal(r.stats.timeouts, 1);
    assert_int_equal(r.stats.failed, 1);
    assert_int_equal(r.f.releases, 1); /* visible again for the next attempt */
    teardown_run(&r);
}

static void test_consumer_graceful_stop_finishes_running(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    for (int i = 0; i < 3; i++)
        fq_add(&r.f, "orders", "m", 0);
    r.o.batch_size = 1;
    r.o.new_batch_threshold = 1;
    r.h.sleep_ms = 300;
    r.h.stop_after = &r.stop; /* stop while the first message runs */
    r.h.stop_at = 1;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.h.calls, 1);
    assert_int_equal(r.f.deletes, 1); /* the running one finished and was deleted */
    assert_int_equal(fq_live(&r.f, "orders"), 2);
    teardown_run(&r);
}

static void test_consumer_shutdown_timeout_cancels_handlers(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "forever", 4); /* its 5th attempt: a failure would poison it */
    r.h.wait_for_cancel = true;
    r.h.stop_after = &r.stop;
    r.h.stop_at = 1;
    r.o.shutdown_timeout_ms = 200;
    uint64_t t0 = real_ms();
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_true(r.h.saw_cancel);
    assert_true(real_ms() - t0 < 3000);
    /* cancelled by the shutdown: released at once, never poisoned for it */
    assert_int_equal(r.stats.poisoned, 0);
    assert_int_equal(r.f.releases, 1);
    assert_int_equal(fq_live(&r.f, "orders"), 1);
    teardown_run(&r);
}


/* --exit-when-empty: "empty" is an answer with no message; a poll that fails ends the drain
 * with its error, and the message is still there. */
static void test_consumer_drain_stops_on_failed_poll_not_empty(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 0);
    r.f.main_missing = true;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_E_NOT_FOUND);
    assert_int_equal(r.h.calls, 0);
    assert_int_equal(fq_live(&r.f, "orders"), 1);
    teardown_run(&r);

    setup_run(&r);
    fq_add(&r.f, "orders", "m", 0);
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.h.calls, 1);
    assert_int_equal(fq_live(&r.f, "orders"), 0);
    teardown_run(&r);
}

/* A reply with more messages than asked for is a service error: counted, nothing run. */
static void test_consumer_reply_larger_than_asked_is_rejected(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    for (int i = 0; i < 4; i++)
        fq_add(&r.f, "orders", "m", 0);
    r.f.overfill = true;
    r.o.batch_size = 2;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_E_PARSE);
    assert_int_equal(r.stats.rejected_replies, 1);
    assert_int_equal(r.stats.received, 0);
    assert_int_equal(r.h.calls, 0);
    teardown_run(&r);
}

/* Deletes refused because the credential stopped working are an outage: counted as such, the
 * message is not poisoned, and recovery clears it. */
static void test_consumer_delete_outage_is_not_the_message_fault(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 4);
    r.f.delete_status = 403;
    snprintf(r.f.delete_code, sizeof(r.f.delete_code), "AuthenticationFailed");
    r.o.max_messages = 1;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.h.calls, 1);
    assert_int_equal(r.stats.service_failing, 1);
    assert_int_equal(r.stats.poisoned, 0);
    /* handled, not deleted: counted, so that received adds up */
    assert_int_equal(r.stats.succeeded, 0);
    assert_int_equal(r.stats.delete_failures, 1);
    assert_int_equal(r.f.puts, 0);
    assert_int_equal(fq_live(&r.f, "orders"), 1);
    teardown_run(&r);

    /* a drain whose deletes failed did not empty the queue: it ends with the outage's error */
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 0);
    r.f.delete_status = 503;
    snprintf(r.f.delete_code, sizeof(r.f.delete_code), "ServerBusy");
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_E_HTTP);
    assert_int_equal(r.stats.poisoned, 0);
    teardown_run(&r);
}

/* A handler whose target is down holds its message: retried in the same dequeue until the
 * target answers, never counted as a failure or toward poison, even on its last attempt. */
static void test_consumer_unavailable_target_holds_the_message(void **state)
{
    (void)state;
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 4); /* the next delivery is its 5th: a failure would poison it */
    r.h.unavailable_for = 3;
    r.o.max_messages = 1;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.h.calls, 4); /* three unavailable, then done */
    assert_int_equal(r.stats.failed, 0);
    assert_int_equal(r.stats.poisoned, 0);
    assert_int_equal(r.stats.succeeded, 1);
    assert_int_equal(r.f.gets, 1); /* held in one dequeue, never received again */
    assert_int_equal(r.stats.held, 0);
    assert_int_equal(r.stats.target_down_ms, 0);
    assert_int_equal(fq_live(&r.f, "orders"), 0);
    teardown_run(&r);
}

/* A stop while a message is held gives its dequeue back: visible again at once, recorded, and
 * the next run counts that delivery as the attempt it would have been. */
static void test_consumer_given_back_dequeue_is_not_counted(void **state)
{
    (void)state;
    char dir[] = "/tmp/sqlq-abandoned-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/record", dir);
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 4);
    r.h.unavailable_for = 1000;
    r.h.stop_after = &r.stop;
    r.h.stop_at = 1;
    r.o.abandoned_path = path;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_OK);
    assert_int_equal(r.stats.given_back, 1);
    assert_int_equal(r.stats.failed, 0);
    assert_int_equal(r.f.releases, 1);
    /* the next run: DequeueCount 6, over the maximum 5, but one dequeue was given back */
    r.stop = 0;
    r.h.unavailable_for = 0;
    r.h.stop_after = NULL;
    r.o.max_messages = 1;
    r.f.q[0].msgs[0].visible_at = 0;
    run_consumer(&r);
    assert_int_equal(r.stats.poisoned, 0);
    assert_int_equal(r.stats.succeeded, 1);
    assert_int_equal(r.h.last_dq, 6);
    assert_int_equal(r.h.last_attempt, 5);
    teardown_run(&r);
    unlink(path);
    char lock[300];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(lock);
    rmdir(dir);
}

static void quiet(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)ctx;
    (void)level;
    (void)event;
    (void)fields;
}

/* The log lines of one run, event and fields, for the tests of what is logged. */
typedef struct log_seen {
    char text[16384];
    size_t len;
} log_seen;

static void record_log(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)level;
    log_seen *l = ctx;
    int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s %s\n", event, fields);
    if (n > 0 && l->len + (size_t)n < sizeof(l->text))
        l->len += (size_t)n;
}

/* A handler cancelled by the shutdown is not a failed handler (logged
 * consumer.cancelled only, not counted as failed); a drain that stops at a failed poll never
 * says it is retrying. */
static void test_consumer_cancel_and_drain_log_what_happens(void **state)
{
    (void)state;
    static log_seen seen;
    memset(&seen, 0, sizeof(seen));
    sqlq_log_set_sink(record_log, &seen);
    run_ctx r;
    setup_run(&r);
    fq_add(&r.f, "orders", "forever", 0);
    r.h.wait_for_cancel = true;
    r.h.stop_after = &r.stop;
    r.h.stop_at = 1;
    r.o.shutdown_timeout_ms = 200;
    run_consumer(&r);
    assert_true(r.h.saw_cancel);
    assert_non_null(strstr(seen.text, "consumer.cancelled "));
    assert_null(strstr(seen.text, "consumer.handler_failed"));
    assert_int_equal(r.stats.failed, 0);
    teardown_run(&r);

    memset(&seen, 0, sizeof(seen));
    setup_run(&r);
    fq_add(&r.f, "orders", "m", 0);
    r.f.main_missing = true;
    r.o.exit_when_empty = true;
    run_consumer(&r);
    assert_int_equal(r.result, SQLQ_E_NOT_FOUND);
    assert_non_null(strstr(seen.text, "consumer.drain_failed "));
    assert_null(strstr(seen.text, "retry"));
    assert_null(strstr(seen.text, "polling continues"));
    teardown_run(&r);
    sqlq_log_set_sink(getenv("SQLQ_TEST_VERBOSE") ? NULL : quiet, NULL);
}

int main(void)
{
    if (!getenv("SQLQ_TEST_VERBOSE"))
        sqlq_log_set_sink(quiet, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumer_failing_message_poisoned_after_five),
        cmocka_unit_test(test_consumer_cancel_and_drain_log_what_happens),
        cmocka_unit_test(test_consumer_over_limit_on_receipt_goes_to_poison),
        cmocka_unit_test(test_consumer_undecodable_goes_to_poison_at_once),
        cmocka_unit_test(test_consumer_renews_with_latest_receipt),
        cmocka_unit_test(test_consumer_ownership_lost_is_not_deleted),
        cmocka_unit_test(test_consumer_transient_renewal_failure_retries_sooner),
        cmocka_unit_test(test_consumer_batch_and_threshold_bound_concurrency),
        cmocka_unit_test(test_consumer_polling_backoff_on_injected_clock),
        cmocka_unit_test(test_consumer_missing_queue_keeps_polling),
        cmocka_unit_test(test_consumer_message_timeout_cancels),
        cmocka_unit_test(test_consumer_graceful_stop_finishes_running),
        cmocka_unit_test(test_consumer_shutdown_timeout_cancels_handlers),
        cmocka_unit_test(test_consumer_drain_stops_on_failed_poll_not_empty),
        cmocka_unit_test(test_consumer_reply_larger_than_asked_is_rejected),
        cmocka_unit_test(test_consumer_delete_outage_is_not_the_message_fault),
        cmocka_unit_test(test_consumer_unavailable_target_holds_the_message),
        cmocka_unit_test(test_consumer_given_back_dequeue_is_not_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
