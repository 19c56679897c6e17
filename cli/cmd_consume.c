/* cmd_consume: `sqlq consume QUEUE (--exec CMD | --http URL | --sql CONN --table T)`: the
 * queue-trigger runtime on the command line. */
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "consumer.h"
#include "handler_exec.h"
#include "handler_http.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "queue_client.h"
#include "shard_set.h"
#include "sql_sink.h"

#include "abandoned.h"

#include <errno.h>
#include <pthread.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>

typedef struct consume_settings {
    char *exec;
    char *http;
    char *sql;
    char *table;
    bool version_check;
    char *version_table;
    char *reset_version;
    bool noop;
    long long batch_size;
    long long new_batch_threshold;
    long long max_polling_interval_ms;
    long long lease_s;
    long long visibility_timeout_s;
    bool visibility_backoff;
    long long visibility_backoff_max_s;
    long long max_dequeue_count;
    long long message_timeout_s;
    long long shutdown_timeout_s;
    long long http_timeout_ms;
    long long max_messages;
    bool exit_when_empty;
    bool poison_envelope;
    long long shards;
    char *listen;
    char *state_dir;
    sqlq_common_settings common;
} consume_settings;

#define S consume_settings
static const sqlq_setting settings[] = {
    SQLQ_SETTING_STR(S, exec, "exec", "SQLQ_EXEC", NULL,
                     "handler: run this shell command per message (body on stdin, metadata in "
                     "SQLQ_MESSAGE_ID, SQLQ_DEQUEUE_COUNT, SQLQ_INSERTION_TIME, SQLQ_QUEUE); "
                     "exit 0 = success, exit 65 = no retry can succeed: poison at once"),
    SQLQ_SETTING_STR(S, http, "http", "SQLQ_HTTP", NULL,
                     "handler: POST each body to this URL (X-Sqlq-* headers); 2xx = success, 422 = "
                     "no retry can succeed: poison at once"),
    {"sql", 0, "SQLQ_SQL", NULL, SQLQ_SET_SECRET, NULL, 0, 0, NULL,
     "handler: ODBC connection string of a database to apply bridge change messages to "
     "(with --table)",
     offsetof(S, sql)},
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "target table for --sql (must exist; its primary key must match the "
                     "messages' keys)"),
    SQLQ_SETTING_BOOL(S, version_check, "version_check", NULL, "true",
                      "--sql: apply a change only when its version is newer than the last one "
                      "applied for its key (kept in --version-table, created if missing)"),
    SQLQ_SETTING_STR(S, version_table, "version_table", NULL, "sqlq_sink_versions",
                     "--sql: the table that remembers the last applied version per key"),
    SQLQ_SETTING_STR(S, reset_version, "reset_version", NULL, NULL,
                     "--sql: before starting, forget the remembered version of one key (the key "
                     "object as messages carry it, e.g. {\"id\":1}) or of every key (all), so "
                     "the next change applies whatever its version"),
    SQLQ_SETTING_BOOL(S, noop, "noop", NULL, "false",
                      "handler that succeeds at once: drains the queue (benchmarks, clean-up)"),
    SQLQ_SETTING_INT(S, batch_size, "batch_size", "SQLQ_BATCH_SIZE", "16", 1, 32,
                     "messages per Get Messages request (WebJobs batchSize)"),
    SQLQ_SETTING_INT(S, new_batch_threshold, "new_batch_threshold", "SQLQ_NEW_BATCH_THRESHOLD", "8",
                     1, 1000,
                     "get the next batch when fewer than this many messages are still running"),
    SQLQ_SETTING_INT(S, max_polling_interval_ms, "max_polling_interval_ms",
                     "SQLQ_MAX_POLLING_INTERVAL_MS", "60000", 100, 3600000,
                     "longest wait between polls of an empty queue (maxPollingInterval)"),
    SQLQ_SETTING_INT(S, lease_s, "lease_s", "SQLQ_LEASE_S", "600", 1, 604800,
                     "visibility of a received message, renewed at half while its handler runs"),
    SQLQ_SETTING_INT(S, visibility_timeout_s, "visibility_timeout_s", "SQLQ_VISIBILITY_TIMEOUT_S",
                     "0", 0, 604800,
                     "delay before a failed message is visible again (WebJobs visibilityTimeout)"),
    SQLQ_SETTING_BOOL(S, visibility_backoff, "visibility_backoff", "SQLQ_VISIBILITY_BACKOFF",
                      "false", "double that delay with each attempt: timeout * 2^(dequeue-1)"),
    SQLQ_SETTING_INT(S, visibility_backoff_max_s, "visibility_backoff_max_s", NULL, "3600", 1,
                     604800, "cap on the grown delay"),
    SQLQ_SETTING_INT(S, max_dequeue_count, "max_dequeue_count", "SQLQ_MAX_DEQUEUE_COUNT", "5", 1,
                     1000, "attempts before a failing message moves to {queue}-poison"),
    SQLQ_SETTING_INT(S, message_timeout_s, "message_timeout_s", "SQLQ_MESSAGE_TIMEOUT_S", "0", 0,
                     604800,
                     "per-message timeout: the handler is cancelled (--exec: killed) and the "
                     "attempt fails; 0 = none"),
    SQLQ_SETTING_INT(S, shutdown_timeout_s, "shutdown_timeout_s", "SQLQ_SHUTDOWN_TIMEOUT_S", "30",
                     0, 3600,
                     "on SIGTERM/SIGINT, how long running handlers may finish; then they are "
                     "cancelled, and the process exits at most 5 s later even when the queue "
                     "service does not answer"),
    SQLQ_SETTING_INT(S, http_timeout_ms, "http_timeout_ms", NULL, "30000", 1, 3600000,
                     "--http: request timeout"),
    SQLQ_SETTING_INT(S, max_messages, "max_messages", NULL, "0", 0, 1000000000000LL,
                     "stop after taking this many messages (and finishing them); 0 = never"),
    SQLQ_SETTING_BOOL(S, exit_when_empty, "exit_when_empty", NULL, "false",
                      "stop once the queue service answers a poll with no message while nothing "
                      "runs (drain and exit 0); a poll that fails after its retries (about 10 s) "
                      "exits 1 with the cause"),
    SQLQ_SETTING_BOOL(S, poison_envelope, "poison_envelope", "SQLQ_POISON_ENVELOPE", "false",
                      "put a JSON message into QUEUE-poison inside {\"sqlq_poison\":1,\"reason\":…,"
                      "\"message\":…} with the handler's reason (poison requeue puts back the same "
                      "bytes); false: the same message text, as Functions does"),
    SQLQ_SETTING_INT(S, shards, "shards", "SQLQ_SHARDS", "0", 0, 256,
                     "QUEUE names a shard set: consume QUEUE-0 … QUEUE-(N-1) at once, a poll loop "
                     "each (several QUEUE arguments, or a comma-separated list, work too)"),
    SQLQ_SETTING_STR(S, listen, "listen", "SQLQ_LISTEN", NULL,
                     "serve /healthz, /readyz and /metrics on HOST:PORT (off when unset)"),
    SQLQ_SETTING_STR(S, state_dir, "state_dir", "SQLQ_STATE_DIR", NULL,
                     "directory (created, mode 0700) where the consumer records the dequeues it "
                     "gives back without an attempt (a shutdown, a drain that gives up on the "
                     "handler's target), so that they do not count toward poison; unset: "
                     "$XDG_STATE_HOME/sqlq or ~/.local/state/sqlq; none: no record (they count, "
                     "as in Azure Functions)"),
    SQLQ_COMMON_SETTINGS(S, common)};
#undef S

static const sqlq_config_spec spec = {
    "consume",
    "sqlq consume QUEUE... (--exec CMD | --http URL | --sql CONN --table T | --noop) [options]",
    "Run a handler for each message of QUEUE, the way an Azure Functions queue trigger does:\n"
    "batches of 16, visibility renewed while a handler runs, delete on success, retry on\n"
    "failure, and after max-dequeue-count attempts the message text moves to QUEUE-poison.\n"
    "Messages are base64 by default (what Functions producers send); use --encoding plain\n"
    "for producers that send plain text. The connection comes from --queue-connection,\n"
    "$SQLQ_QUEUE_CONNECTION or $AzureWebJobsStorage (each also as _FILE). SIGTERM/SIGINT stop\n"
    "taking messages and let running handlers finish (a second signal exits at once).\n"
    "Several queues (a shard set: QUEUE --shards N, a comma-separated list, or several QUEUE\n"
    "arguments) are consumed at once, each with its own poll loop and QUEUE-poison, sharing\n"
    "the handler.",
    settings,
    sizeof(settings) / sizeof(settings[0]),
    1,
    SQLQ_SHARDS_MAX};

const sqlq_config_spec *sqlq_cmd_consume_spec(void)
{
    return &spec;
}

typedef struct handlers {
    sqlq_handler_exec *exec;
    sqlq_handler_http *http;
    sqlq_sql_sink *sink;
    sqlq_handler handler;
} handlers;

static int usage_error(const char *msg)
{
    fprintf(stderr, "sqlq consume: %s\n(see sqlq consume --help)\n", msg);
    return SQLQ_EXIT_USAGE;
}

static int report(const char *what, const sqlq_error *err, int code)
{
    char line[800];
    sqlq_error_format(err, line, sizeof(line));
    fprintf(stderr, "sqlq consume: %s: %s\n", what, line);
    return code;
}

static sqlq_result noop_handle(void *ctx, const sqlq_received *d, sqlq_error *err)
{
    (void)ctx;
    (void)d;
    (void)err;
    return SQLQ_OK;
}

static int reset_versions(const consume_settings *s, sqlq_sql_sink *sink)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    long long n = 0;
    sqlq_result r = sqlq_sql_sink_reset_versions(sink, s->reset_version, &n, &err);
    if (r != SQLQ_OK)
        return report("--reset-version", &err,
                      r == SQLQ_E_INVALID ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED);
    SQLQ_INFO("sink.versions_reset", "table=%s key=%s forgotten=%lld", s->table, s->reset_version,
              n);
    return -1;
}

static int make_handler(const consume_settings *s, handlers *h)
{
    int chosen = (s->exec != NULL) + (s->http != NULL) + (s->sql != NULL) + s->noop;
    if (chosen != 1)
        return usage_error(
            "give exactly one handler: --exec CMD, --http URL, --sql CONN or --noop");
    if (s->sql && !s->table)
        return usage_error("--sql needs --table (the target table)");
    if (s->table && !s->sql)
        return usage_error("--table is only for --sql");
    sqlq_error err;
    sqlq_error_clear(&err);
    if (s->noop) {
        h->handler = (sqlq_handler){.handle = noop_handle};
    } else if (s->exec) {
        if (sqlq_handler_exec_create(s->exec, 2000, &h->exec, &err) != SQLQ_OK)
            return report("--exec", &err, SQLQ_EXIT_USAGE);
        h->handler = sqlq_handler_exec_bind(h->exec);
        /* The command runs as our user: not dumpable, our /proc/PID/environ, mem and maps
         * belong to root and no process of our user can read or ptrace them (the secrets in
         * our memory). Each command execs, which makes it dumpable again. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
            SQLQ_WARN("consume.dumpable", "err=\"%s\" note=\"an --exec command of this user may "
                      "read this process's memory\"", strerror(errno));
    } else if (s->http) {
        if (sqlq_handler_http_create(s->http, (long)s->http_timeout_ms, &h->http, &err) != SQLQ_OK)
            return report("--http", &err, SQLQ_EXIT_USAGE);
        h->handler = sqlq_handler_http_bind(h->http);
    } else {
        sqlq_result r = sqlq_sql_sink_create(
            s->sql, s->table, s->version_check ? s->version_table : NULL, &h->sink, &err);
        if (r != SQLQ_OK)
            return report("--sql", &err,
                          r == SQLQ_E_NOT_FOUND || r == SQLQ_E_INVALID ? SQLQ_EXIT_USAGE
                                                                       : SQLQ_EXIT_FAILED);
        h->handler = sqlq_sql_sink_bind(h->sink);
        if (s->reset_version)
            return reset_versions(s, h->sink);
    }
    return -1;
}

static void free_handlers(handlers *h)
{
    sqlq_handler_exec_destroy(h->exec);
    sqlq_handler_http_destroy(h->http);
    sqlq_sql_sink_destroy(h->sink);
}

static void fill_options(const consume_settings *s, sqlq_encoding enc, sqlq_consumer_options *o)
{
    sqlq_consumer_options_default(o);
    o->batch_size = (int)s->batch_size;
    o->new_batch_threshold = (int)s->new_batch_threshold;
    o->max_polling_ms = (uint64_t)s->max_polling_interval_ms;
    o->lease_s = (int)s->lease_s;
    o->visibility_timeout_s = (int)s->visibility_timeout_s;
    o->visibility_backoff = s->visibility_backoff;
    o->visibility_max_s = (int)s->visibility_backoff_max_s;
    o->max_dequeue_count = (long)s->max_dequeue_count;
    o->message_timeout_ms = (uint64_t)s->message_timeout_s * 1000u;
    o->shutdown_timeout_ms = (uint64_t)s->shutdown_timeout_s * 1000u;
    o->encoding = enc;
    o->max_messages = (unsigned long long)s->max_messages;
    o->exit_when_empty = s->exit_when_empty;
    o->poison_envelope = s->poison_envelope;
    o->stop = &sqlq_stop_flag;
}

/* /readyz: ready while the queue answers every consumer's polls (one per queue) and leaves no
 * request unanswered for SQLQ_QUEUE_SILENT_MS. */
typedef struct consume_health {
    sqlq_consumer **consumers; /* n entries; each set once, before `ready` */
    size_t n;
    atomic_int ready; /* the consumers exist */
    sqlq_answer_watch answers; /* every consumer's requests to the queue service */
} consume_health;

static bool one_ready(sqlq_consumer *c, char *reason, size_t reason_size)
{
    sqlq_consumer_stats st;
    sqlq_consumer_get_stats(c, &st);
    if (st.polls == 0) {
        snprintf(reason, reason_size, "starting: no poll answered yet");
        return false;
    }
    if (st.poll_failing > 0) {
        snprintf(reason, reason_size,
                 "the last %llu polls failed: credential refused, queue service unreachable or "
                 "queue missing (see the consumer.poll_failed log line)",
                 st.poll_failing);
        return false;
    }
    char cause[400];
    if (sqlq_consumer_target_down(c, cause, sizeof(cause))) {
        snprintf(reason, reason_size,
                 "%s (for %llu s; %llu message(s) held, not counted toward poison; see the "
                 "consumer.handler_outage log line)",
                 cause, st.target_down_ms / 1000u, st.held);
        return false;
    }
    if (st.service_failing > 0) {
        snprintf(reason, reason_size,
                 "the last %llu deletes/updates failed with an outage (credential, throttling or "
                 "network; see the consumer.outage log line)",
                 st.service_failing);
        return false;
    }
    return true;
}

/* mkdir -p with mode 0700 for what it creates; false (errno set) when path is not a directory. */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    struct stat st;
    return (mkdir(path, 0700) == 0 || errno == EEXIST) && stat(path, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

/* The file recording dequeues given back (abandoned.h), under --state-dir or its default; ""
 * when there is none (said why). */
static void abandoned_file(const consume_settings *s, const sqlq_account *account,
                           const char *queue, char *out, size_t out_size)
{
    char dir[900];
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    out[0] = '\0';
    if (s->state_dir && strcmp(s->state_dir, "none") == 0)
        return;
    if (s->state_dir && *s->state_dir)
        snprintf(dir, sizeof(dir), "%s", s->state_dir);
    else if (xdg && *xdg == '/')
        snprintf(dir, sizeof(dir), "%s/sqlq", xdg);
    else if (home && *home == '/')
        snprintf(dir, sizeof(dir), "%s/.local/state/sqlq", home);
    else
        dir[0] = '\0';
    if (!dir[0] || !make_dirs(dir)) {
        SQLQ_WARN("consumer.state_unusable",
                  "state_dir=\"%s\" err=\"%s\" note=\"dequeues given back without an attempt "
                  "(at shutdown, or when a drain gives up on the handler's target) cannot be "
                  "recorded: they will count toward poison; set --state-dir to a writable "
                  "directory\"",
                  dir, dir[0] ? strerror(errno) : "neither --state-dir, XDG_STATE_HOME nor HOME is set");
        return;
    }
    sqlq_abandoned_path(dir, account->endpoint, queue, out, out_size);
}

/* What a drain that ended with an error says before the cause. */
static const char *drain_failure(const sqlq_consumer *c)
{
    switch (sqlq_consumer_drain_end(c)) {
    case SQLQ_DRAIN_QUEUE_UNREADABLE:
        return "the queue could not be read, so it is not known to be empty";
    case SQLQ_DRAIN_NOT_SETTLED: return "the queue was not drained";
    case SQLQ_DRAIN_TARGET_DOWN:
        return "the handler's target is unavailable, so the queue was not drained (its messages "
               "went back to the queue, not counted toward poison)";
    case SQLQ_DRAIN_FINISHED: break;
    }
    return "consumer";
}

static bool consume_ready(void *ctx, char *reason, size_t reason_size)
{
    consume_health *h = ctx;
    if (!atomic_load(&h->ready)) {
        snprintf(reason, reason_size, "starting: no poll answered yet");
        return false;
    }
    if (sqlq_stop_flag) {
        snprintf(reason, reason_size, "stopping");
        return false;
    }
    if (!sqlq_queue_answering(&h->answers, reason, reason_size))
        return false;
    for (size_t i = 0; i < h->n; i++)
        if (!one_ready(h->consumers[i], reason, reason_size))
            return false;
    return true;
}

/* The queue and room for its poison queue: -1 when allowed, else the exit code (said why). */
static int check_queue_name(const char *queue)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (!sqlq_queue_name_valid(queue, &err)) {
        char line[400];
        sqlq_error_format(&err, line, sizeof(line));
        fprintf(stderr, "sqlq consume: %s\n", line); /* the error names the queue already */
        return SQLQ_EXIT_USAGE;
    }
    size_t qlen = strlen(queue);
    char poison[64];
    if (!sqlq_queue_poison_name(queue, poison, sizeof(poison)) &&
        !(qlen >= 7 && strcmp(queue + qlen - 7, "-poison") == 0)) {
        fprintf(stderr,
                "sqlq consume: queue name '%s' is not allowed: %zu characters leave no room for "
                "its poison queue '%s-poison' (queue names are at most 63 characters, so at most "
                "56 here)\n",
                queue, qlen, queue);
        return SQLQ_EXIT_USAGE;
    }
    return -1;
}

/* One consumer's run, on a thread of its own when there are several queues. */
typedef struct run_one {
    sqlq_consumer *c;
    pthread_t thread;
    bool threaded;
    sqlq_result r;
    sqlq_error err;
    char state_file[1200]; /* its record of dequeues given back (abandoned.h); "": none */
} run_one;

static void *run_thread(void *arg)
{
    run_one *o = arg;
    sqlq_error_clear(&o->err);
    o->r = sqlq_consumer_run(o->c, &o->err);
    return NULL;
}

/* Every consumer at once; the exit code of the first that failed (or 0). */
static int run_all(run_one *runs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        runs[i].threaded = pthread_create(&runs[i].thread, NULL, run_thread, &runs[i]) == 0;
    run_thread(&runs[0]);
    for (size_t i = 1; i < n; i++)
        if (runs[i].threaded)
            pthread_join(runs[i].thread, NULL);
        else
            run_thread(&runs[i]);
    for (size_t i = 0; i < n; i++) {
        if (runs[i].r == SQLQ_E_TIMEOUT) {
            /* A handler ignored cancellation: leave without freeing what it may still use. */
            report("shutdown", &runs[i].err, SQLQ_EXIT_FAILED);
            fflush(NULL);
            _Exit(SQLQ_EXIT_FAILED);
        }
        if (runs[i].r != SQLQ_OK)
            return report(drain_failure(runs[i].c), &runs[i].err, SQLQ_EXIT_FAILED);
    }
    return SQLQ_EXIT_OK;
}

/* The account reaches every queue (a queue-scoped SAS URL reaches its own only): -1 when it
 * does, else the exit code (said why). The one queue of a queue-scoped SAS may be left out. */
static int check_reach(sqlq_account *account, const char **queues, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (n == 1 && sqlq_account_queue(account, queues[0], &queues[0], &err) != SQLQ_OK)
        return report("queue", &err, SQLQ_EXIT_USAGE);
    for (size_t i = 0; n > 1 && i < n; i++)
        if (!sqlq_account_reaches(account, queues[i], &err))
            return report("queue", &err, SQLQ_EXIT_USAGE);
    if (account->queue) /* a queue-scoped SAS URL reaches this queue only */
        SQLQ_WARN("poison_queue_unreachable",
                  "queue=%s note=\"the queue connection is a SAS URL scoped to this queue: "
                  "messages cannot be moved to the poison queue with it\"",
                  queues[0]);
    return -1;
}

static int run(consume_settings *s, const char **queues, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_cli_queue q;
    int code = -1;
    for (size_t i = 0; i < n && code < 0; i++)
        code = check_queue_name(queues[i]);
    if (code >= 0)
        return code;
    code = sqlq_cli_queue_open("consume", &s->common, SQLQ_CLI_ACCOUNT_ONLY, &q);
    if (code < 0)
        code = check_reach(q.account, queues, n);
    if (code >= 0) {
        sqlq_cli_queue_close(&q);
        return code;
    }
    handlers h = {0};
    code = make_handler(s, &h);
    sqlq_metrics *metrics = NULL;
    sqlq_http_server *server = NULL;
    run_one *runs = calloc(n, sizeof(*runs));
    sqlq_consumer **all = calloc(n, sizeof(*all));
    consume_health health = {all, n, 0, {0, 0}};
    sqlq_answer_watch_init(&health.answers);
    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    qo.watch = &health.answers;
    if (!runs || !all)
        code = usage_error("out of memory");
    if (code < 0 && s->listen) {
        if (sqlq_metrics_create(&metrics) != SQLQ_OK ||
            sqlq_http_server_start(s->listen, metrics, consume_ready, &health, &server, &err) !=
                SQLQ_OK)
            code = report("--listen", &err, SQLQ_EXIT_USAGE);
        if (code < 0 && h.sink)
            sqlq_sql_sink_use_metrics(h.sink, metrics);
    }
    for (size_t i = 0; code < 0 && i < n; i++) {
        sqlq_consumer_options o;
        fill_options(s, q.encoding, &o);
        o.metrics = metrics;
        abandoned_file(s, q.account, queues[i], runs[i].state_file, sizeof(runs[i].state_file));
        o.abandoned_path = runs[i].state_file[0] ? runs[i].state_file : NULL;
        if (sqlq_consumer_create(q.account, &qo, queues[i], &o, &h.handler, &runs[i].c, &err) != SQLQ_OK)
            code = report("start", &err, SQLQ_EXIT_USAGE);
        all[i] = runs[i].c;
    }
    if (code < 0) {
        atomic_store(&health.ready, 1);
        code = run_all(runs, n);
    }
    sqlq_http_server_stop(server); /* first: its thread reads the consumers' stats */
    for (size_t i = 0; runs && i < n; i++)
        sqlq_consumer_destroy(runs[i].c);
    free(runs);
    free(all);
    sqlq_metrics_destroy(metrics);
    free_handlers(&h);
    sqlq_cli_queue_close(&q);
    return code;
}

/* The queues: QUEUE (with --shards N: QUEUE-0 … QUEUE-(N-1)), a comma-separated list, or
 * several arguments; -1 when usable, else the exit code (said why). */
static int queues_of(const consume_settings *s, const sqlq_config_result *res, sqlq_shard_set *set)
{
    memset(set, 0, sizeof(*set));
    bool one = res->npositional == 1 && s->shards < 2 && !strchr(res->positional[0], ',');
    if (one)
        return -1;
    if (res->npositional > 1 && s->shards >= 2)
        return usage_error("--shards takes one QUEUE (the shard set's name)");
    sqlq_buf b;
    sqlq_buf_init(&b, 64 * 1024);
    for (size_t i = 0; i < res->npositional; i++)
        if ((i && sqlq_buf_adds(&b, ",") != SQLQ_OK) || sqlq_buf_adds(&b, res->positional[i]) != SQLQ_OK) {
            sqlq_buf_free(&b);
            return usage_error("too many queues");
        }
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_shard_set_parse(sqlq_buf_str(&b), s->shards, NULL, 0, set, &err);
    sqlq_buf_free(&b);
    if (r != SQLQ_OK)
        return report("queues", &err, SQLQ_EXIT_USAGE);
    for (size_t i = 0; i < set->count; i++)
        if (set->accounts[i]) {
            sqlq_shard_set_free(set);
            return usage_error("a queue here names no account (account:queue): run one consume "
                               "per account, each with its queue connection");
        }
    return -1;
}

int sqlq_cmd_consume(int argc, char **argv)
{
    consume_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int code = sqlq_config_load_or_exit(&spec, &s, argc, argv, &res);
    if (code >= 0) {
        sqlq_config_free(&spec, &s, &res);
        return code;
    }
    sqlq_common_settings_apply(&s.common);
    sqlq_shard_set set;
    code = queues_of(&s, &res, &set);
    const char *one = res.positional[0];
    const char **names = set.count ? calloc(set.count, sizeof(*names)) : &one;
    for (size_t i = 0; names && i < set.count; i++)
        names[i] = set.queues[i];
    if (code < 0)
        code = names ? run(&s, names, set.count ? set.count : 1) : usage_error("out of memory");
    if (names != &one)
        free(names);
    sqlq_shard_set_free(&set);
    sqlq_config_free(&spec, &s, &res);
    return code;
}
