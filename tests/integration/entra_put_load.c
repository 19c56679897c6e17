/* entra_put_load QUEUE THREADS COUNT SECONDS [PAUSE_MS]: puts messages to QUEUE from THREADS
 * threads, each with its own queue client over one shared account (so one token cache), in
 * batches of 50 with PAUSE_MS between batches (keeps a long run from loading the machine),
 * until COUNT messages are put or SECONDS have passed, whichever is later. The connection comes from
 * $SQLQ_QUEUE_CONNECTION, the CA bundle from $SQLQ_CA_FILE. Prints
 * "puts=N failures=N token_requests=N" and exits 0 when no put failed. A helper of
 * test_entra_behaviour.sh (the token is requested once for thousands of puts from every thread,
 * and refreshed while they run). */
#include "account.h"
#include "credential_token.h"
#include "queue_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 50
#define MAX_THREADS 16

typedef struct worker {
    const sqlq_account *account;
    const char *queue;
    size_t count;  /* this thread's share */
    time_t until;
    long pause_ms;
    size_t puts, failures;
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    sqlq_queue_client *c = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_client_create(w->account, NULL, &c, &err) != SQLQ_OK) {
        fprintf(stderr, "entra_put_load: client: %s\n", err.message);
        w->failures++;
        return NULL;
    }
    sqlq_put_item items[BATCH];
    char bodies[BATCH][64];
    while (w->puts < w->count || time(NULL) < w->until) {
        for (size_t i = 0; i < BATCH; i++) {
            int n = snprintf(bodies[i], sizeof(bodies[i]), "{\"n\":%zu}", w->puts + i);
            items[i] = (sqlq_put_item){bodies[i], (size_t)n, SQLQ_OK, {0}};
        }
        if (sqlq_queue_put_many(c, w->queue, items, BATCH, 16, NULL) == SQLQ_E_CANCELLED)
            break;
        for (size_t i = 0; i < BATCH; i++) {
            if (items[i].result == SQLQ_OK) {
                w->puts++;
                continue;
            }
            char line[700];
            sqlq_error_format(&items[i].error, line, sizeof(line));
            fprintf(stderr, "entra_put_load: put failed: %s\n", line);
            w->failures++;
        }
        struct timespec ts = {w->pause_ms / 1000, (w->pause_ms % 1000) * 1000000L};
        if (w->pause_ms > 0)
            nanosleep(&ts, NULL);
    }
    sqlq_queue_client_destroy(c);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: entra_put_load QUEUE THREADS COUNT SECONDS [PAUSE_MS]\n");
        return 2;
    }
    size_t threads = strtoul(argv[2], NULL, 10), count = strtoul(argv[3], NULL, 10);
    long seconds = strtol(argv[4], NULL, 10);
    long pause_ms = argc == 6 ? strtol(argv[5], NULL, 10) : 0;
    if (threads == 0 || threads > MAX_THREADS)
        threads = 4;
    curl_global_init(CURL_GLOBAL_ALL); /* before any thread */
    sqlq_account *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_account_options o = {false, getenv("SQLQ_CA_FILE")};
    if (sqlq_account_parse_opts(getenv("SQLQ_QUEUE_CONNECTION"), &o, &a, &err) != SQLQ_OK) {
        fprintf(stderr, "entra_put_load: %s\n", err.message);
        return 2;
    }
    worker w[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    time_t until = time(NULL) + seconds;
    for (size_t i = 0; i < threads; i++) {
        w[i] = (worker){a, argv[1], (count + threads - 1) / threads, until, pause_ms, 0, 0};
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    size_t puts = 0, failures = 0;
    for (size_t i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        puts += w[i].puts;
        failures += w[i].failures;
    }
    printf("puts=%zu failures=%zu token_requests=%llu\n", puts, failures,
           a->token ? (unsigned long long)sqlq_token_cache_fetches(a->token) : 0ULL);
    sqlq_account_destroy(a);
    curl_global_cleanup();
    return failures == 0 ? 0 : 1;
}
