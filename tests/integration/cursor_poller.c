/* cursor_poller: a test program that runs one cursor-source poller the way the bridge does:
 * poll -> publish every change (row envelope) to an Azurite queue -> hold -> release. Tests
 * start two of them, kill -9 or SIGSTOP one, and read what it reports on stdout:
 *   leader | standby | polled n=N first=ID last=ID | committed batch_id=B | lease_lost | idle
 * usage: cursor_poller DB_CONN QUEUE_CONN QUEUE TABLE CURSOR INSTANCE LEASE_S BATCH HOLD_MS */
#include "capture.h"
#include "clock.h"
#include "cursor_source.h"
#include "envelope.h"
#include "log.h"
#include "queue_client.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sqlq_stop stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int arg_int(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!end || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "bad number %s\n", s);
        exit(2);
    }
    return (int)v;
}

/* Publish every change; false when any put failed. */
static bool publish(sqlq_queue_client *qc, const char *queue, const char *table,
                    const sqlq_change_batch *b)
{
    sqlq_envelope_config ec;
    sqlq_envelope_config_default(&ec);
    ec.table = table;
    sqlq_envelope_list l = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_msg_change *mc = calloc(b->count ? b->count : 1, sizeof(*mc));
    for (size_t i = 0; mc && i < b->count; i++)
        mc[i] = (sqlq_msg_change){.op = b->items[i].op, .version = b->items[i].version,
                                  .key = b->items[i].key, .row = b->items[i].row};
    sqlq_result built = mc ? sqlq_envelope_build(&ec, mc, b->count, sqlq_clock_wall_ms(), &l, &err)
                           : SQLQ_E_NOMEM;
    free(mc);
    if (built != SQLQ_OK) {
        fprintf(stderr, "envelope: %s\n", err.message);
        return false;
    }
    sqlq_put_item *items = calloc(l.count, sizeof(*items));
    bool ok = items != NULL;
    for (size_t i = 0; ok && i < l.count; i++) {
        items[i].body = l.items[i].body;
        items[i].len = l.items[i].len;
    }
    sqlq_put_options po = {0};
    ok = ok && sqlq_queue_put_many(qc, queue, items, l.count, 16, &po) == SQLQ_OK;
    for (size_t i = 0; ok && i < l.count; i++)
        ok = items[i].result == SQLQ_OK;
    free(items);
    sqlq_envelope_list_free(&l);
    return ok;
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static long long id_of(const sqlq_change *c)
{
    return (long long)json_integer_value(json_object_get(c->key, "id"));
}

static void run(sqlq_cursor_source *cs, sqlq_queue_client *qc, const char *queue,
                const char *table, int hold_ms)
{
    bool was_leader = false, was_idle = false, said_standby = false;
    while (!stop) {
        sqlq_change_batch b;
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_cursor_source_poll(cs, &b, &err) != SQLQ_OK) {
            report("error %s", err.message);
            usleep(200 * 1000);
            continue;
        }
        bool leader = sqlq_cursor_source_leader(cs);
        if (leader && !was_leader)
            report("leader");
        if (!leader && !said_standby)
            report("standby");
        said_standby = !leader;
        was_leader = leader;
        if (b.count == 0) {
            if (leader && !was_idle)
                report("idle");
            was_idle = leader;
            usleep(100 * 1000);
            continue;
        }
        was_idle = false;
        if (!publish(qc, queue, table, &b)) {
            report("publish_failed");
            if (sqlq_cursor_source_abandon(cs, b.items, b.count, false, &err) != SQLQ_OK)
                report("error %s", err.message);
            sqlq_change_batch_free(&b);
            continue;
        }
        report("polled n=%zu first=%lld last=%lld", b.count, id_of(&b.items[0]),
               id_of(&b.items[b.count - 1]));
        usleep((useconds_t)hold_ms * 1000);
        int64_t batch_id = 0;
        sqlq_result r = sqlq_cursor_source_release(cs, b.items, b.count, NULL, &err);
        if (r == SQLQ_OK && sqlq_cursor_source_advance(cs, &batch_id, &err) == SQLQ_OK)
            report("committed batch_id=%lld", (long long)batch_id);
        else if (r == SQLQ_E_LEASE_LOST)
            report("lease_lost %s", err.message);
        else
            report("error %s", err.message);
        sqlq_change_batch_free(&b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: cursor_poller DB_CONN QUEUE_CONN QUEUE TABLE CURSOR INSTANCE "
                        "LEASE_S BATCH HOLD_MS\n");
        return 2;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    sqlq_log_set_level(SQLQ_LOG_WARN);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_db *db = NULL;
    sqlq_account *acct = NULL;
    sqlq_queue_client *qc = NULL;
    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    if (sqlq_db_connect(argv[1], &db, &err) != SQLQ_OK ||
        sqlq_account_parse(argv[2], &acct, &err) != SQLQ_OK ||
        sqlq_queue_client_create(acct, &qo, &qc, &err) != SQLQ_OK) {
        fprintf(stderr, "cursor_poller: %s\n", err.message);
        return 1;
    }
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = SQLQ_SOURCE_CURSOR;
    cfg.table = argv[4];
    cfg.cursor_column = argv[5];
    cfg.instance_id = argv[6];
    cfg.lease_s = arg_int(argv[7]);
    cfg.max_batch_size = arg_int(argv[8]);
    sqlq_cursor_source *cs = NULL;
    if (sqlq_cursor_source_open(db, NULL, &cfg, &cs, &err) != SQLQ_OK) {
        fprintf(stderr, "cursor_poller: %s\n", err.message);
        return 1;
    }
    run(cs, qc, argv[3], argv[4], arg_int(argv[9]));
    sqlq_cursor_source_close(cs);
    sqlq_queue_client_destroy(qc);
    sqlq_account_destroy(acct);
    sqlq_db_close(db);
    return 0;
}
