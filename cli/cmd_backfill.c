/* cmd_backfill: `sqlq backfill`: publish the current rows of a table with op "read" (like a
 * Debezium snapshot), in key order, page by page; resumable after a crash from its own
 * checkpoint, which is committed only after the queue accepted every message of a page.
 *
 * Messages are the read shape of docs/messages.md, written by the message library
 * (message/envelope.h, op read): version = the row's current change version, the one the bridge
 * gives its latest change (sql/cursor/backfill.h), so backfill and bridge messages of a key compare and
 * a page sent again after a crash carries the same message ids. --format batch packs them as
 * {"changes":[…]} under the size limit, in key order. */
#include "backfill.h"
#include "cli.h"
#include "codec.h"
#include "commands.h"
#include "config.h"
#include "envelope.h"
#include "json_int.h"
#include "log.h"
#include "msg_manifest.h"
#include "queue_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct backfill_settings {
    char *db;
    char *table;
    char *queue;
    char *where;
    char *bridge_name;
    long long batch_size;
    long long max_in_flight;
    long long lease_s;
    char *format;
    char *cursor_column;
    char *key_columns;
    bool restart;
    bool wait;
    bool repair;
    sqlq_common_settings common;
} backfill_settings;

#define S backfill_settings
static const sqlq_setting backfill_table[] = {
    SQLQ_SETTING_SECRET(S, db, "db", "SQLQ_DB_CONNECTION", NULL,
                        "ODBC connection string of the database"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL, "table to backfill (needs a primary key, or --key-columns)"),
    SQLQ_SETTING_STR(S, queue, "queue", "SQLQ_QUEUE", NULL, "queue the rows go to"),
    SQLQ_SETTING_STR(S, where, "where", NULL, NULL,
                     "SQL filter pasted into the query as written (your SQL, by design)"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", "default",
                     "names the backfill: its checkpoint is \"backfill:<name>\""),
    SQLQ_SETTING_INT(S, batch_size, "batch_size", "SQLQ_BACKFILL_BATCH_SIZE", "500", 1, 100000,
                     "rows per page (one checkpoint per page)"),
    SQLQ_SETTING_INT(S, max_in_flight, "max_in_flight", "SQLQ_MAX_IN_FLIGHT", "16", 1, 256,
                     "put requests on the wire at once"),
    SQLQ_SETTING_INT(S, lease_s, "lease_s", "SQLQ_LEASE_S", "60", 1, 86400,
                     "lease that keeps a second run of the same backfill out"),
    SQLQ_SETTING_ENUM(S, format, "format", "SQLQ_FORMAT", "row", "row|batch",
                      "one message per row, or {\"changes\":[…]} packed under 64 KiB"),
    SQLQ_SETTING_STR(S, cursor_column, "cursor_column", "SQLQ_CURSOR_COLUMN", NULL,
                     "the table's bridge uses the cursor source on this column: rows carry its "
                     "value as version (otherwise the change log's or change tracking's)"),
    SQLQ_SETTING_STR(S, key_columns, "key_columns", "SQLQ_KEY_COLUMNS", NULL,
                     "page by these columns (comma-separated: a unique index of NOT NULL columns) "
                     "instead of the primary key; unset: the key of the table's change log, else "
                     "the primary key"),
    SQLQ_SETTING_BOOL(S, restart, "restart", NULL, "false",
                      "forget an earlier run of this backfill and start from the first row"),
    SQLQ_SETTING_BOOL(S, repair, "repair", NULL, "false",
                      "also publish repair manifests (the keys each page found, then the number "
                      "of pages): a consume --sql sink then deletes its rows whose key the "
                      "source no longer has (change log or change tracking; docs/messages.md)"),
    SQLQ_SETTING_BOOL(S, wait, "wait", NULL, "true",
                      "while another run of this backfill holds the lease (or a killed one's lease "
                      "has not expired yet), wait for it instead of failing"),
    SQLQ_COMMON_SETTINGS(S, common),
};
#undef S

static const sqlq_config_spec backfill_spec = {
    "backfill",
    "sqlq backfill --db CONN --table T --queue Q [--where SQL] [--bridge-name NAME] [options]",
    "Publish the rows a table holds now (op \"read\") in key order, page by page. Interrupted or\n"
    "killed, the same command resumes after the last page the queue accepted (rows of the page in\n"
    "flight may arrive twice). Its checkpoint is its own: a running bridge is not disturbed.\n"
    "Each row carries its current change version (the change log's, change tracking's, or the\n"
    "--cursor-column value; for a row without one, a version above every earlier message of its\n"
    "key), so consumers compare it with the bridge's messages of the same key, and a replica\n"
    "that missed changes is repaired; --repair also removes what the source no longer has.\n"
    "--where is pasted into the SQL as written: it is your SQL, the only such option of sqlq.",
    backfill_table,
    sizeof(backfill_table) / sizeof(backfill_table[0]),
    0,
    0,
};

const sqlq_config_spec *sqlq_cmd_backfill_spec(void)
{
    return &backfill_spec;
}

typedef struct run_ctx {
    const backfill_settings *s;
    sqlq_queue_client *qc;
    sqlq_encoding encoding;
    bool batch;
    int64_t total; /* -1 unknown */
    bool tty;
    int64_t started_ms, rows_this_run;
} run_ctx;

/* The page's messages (op read): one per row, or packed {"changes":[…]} in key order. A row
 * that does not fit goes key-only ("truncated"); a key alone too large fails the page, as
 * backfill has no poison queue. */
static sqlq_result build_bodies(const run_ctx *ctx, const sqlq_backfill_page *page,
                                sqlq_envelope_list *out, sqlq_error *err)
{
    sqlq_msg_change *ch = calloc(page->count ? page->count : 1, sizeof(*ch));
    if (!ch)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    for (size_t i = 0; i < page->count; i++)
        ch[i] = (sqlq_msg_change){
            .op = SQLQ_OP_READ,
            .version = (int64_t)json_integer_value(json_array_get(page->versions, i)),
            .key = json_array_get(page->keys, i),
            .row = json_array_get(page->rows, i)};
    sqlq_envelope_config cfg;
    sqlq_envelope_config_default(&cfg);
    cfg.bridge_name = ctx->s->bridge_name;
    cfg.table = ctx->s->table;
    cfg.format = ctx->batch ? SQLQ_FORMAT_BATCH : SQLQ_FORMAT_ROW;
    cfg.encoding = ctx->encoding;
    sqlq_result r = sqlq_envelope_build(&cfg, ch, page->count, sqlq_clock_wall_ms(), out, err);
    free(ch);
    for (size_t i = 0; r == SQLQ_OK && i < out->count; i++)
        if (out->items[i].dest != SQLQ_DEST_MAIN)
            r = sqlq_error_set(err, SQLQ_E_TOO_LARGE, false,
                               "a row's key alone exceeds the message size limit");
    return r;
}

/* The version the checkpoint's cursor value holds (0 when it holds none). */
static long long checkpoint_version(const sqlq_checkpoint *cp)
{
    int64_t v = 0;
    return sqlq_json_int64_text(cp->cursor_value, &v) ? (long long)v : 0;
}

static sqlq_manifest_head manifest_head(const run_ctx *ctx, const sqlq_backfill *bf)
{
    sqlq_manifest_head h = {ctx->s->table, ctx->s->bridge_name,
                            sqlq_backfill_checkpoint(bf)->run_id, ctx->encoding,
                            SQLQ_MESSAGE_MAX_TEXT, sqlq_clock_wall_ms()};
    return h;
}

/* --repair: the page's manifest parts (the keys it found; prev: the floor of the page before,
 * as committed). */
static sqlq_result page_manifest(const run_ctx *ctx, const sqlq_backfill *bf,
                                 const sqlq_backfill_page *page, char ***out, size_t *out_n,
                                 sqlq_error *err)
{
    *out = NULL;
    *out_n = 0;
    if (!ctx->s->repair)
        return SQLQ_OK;
    const sqlq_checkpoint *cp = sqlq_backfill_checkpoint(bf);
    sqlq_manifest_head h = manifest_head(ctx, bf);
    bool has_prev = cp->batch_id > 0 && cp->cursor_value;
    long long prev = has_prev ? checkpoint_version(cp) : 0;
    return sqlq_msg_manifest_page(&h, page->end.batch_id, page->floor, has_prev, prev,
                                  page->keys, out, out_n, err);
}

/* Put every message of the page (and with --repair its manifest); SQLQ_OK only when the queue
 * accepted all of them. */
static sqlq_result publish(const run_ctx *ctx, const sqlq_backfill *bf,
                           const sqlq_backfill_page *page, sqlq_error *err)
{
    sqlq_envelope_list b = {0};
    char **manifest = NULL;
    size_t nm = 0;
    sqlq_result r = build_bodies(ctx, page, &b, err);
    if (r == SQLQ_OK)
        r = page_manifest(ctx, bf, page, &manifest, &nm, err);
    size_t n = b.count + nm;
    sqlq_put_item *items = r == SQLQ_OK ? calloc(n ? n : 1, sizeof(*items)) : NULL;
    if (r == SQLQ_OK && !items)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        items[i].body = i < b.count ? b.items[i].body : manifest[i - b.count];
        items[i].len = i < b.count ? b.items[i].len : strlen(manifest[i - b.count]);
    }
    sqlq_put_options po = {0};
    po.ttl_s = -1; /* never expires, as the bridge's messages (docs/messages.md) */
    if (r == SQLQ_OK) {
        r = sqlq_queue_put_many(ctx->qc, ctx->s->queue, items, n, (size_t)ctx->s->max_in_flight,
                                &po);
        if (r != SQLQ_OK)
            r = sqlq_error_set(err, r, false, "publishing was interrupted");
    }
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        if (items[i].result != SQLQ_OK)
            r = sqlq_error_set(err, items[i].result, items[i].error.transient, "put failed: %s",
                               items[i].error.message);
    free(items);
    sqlq_envelope_list_free(&b);
    sqlq_msg_manifest_texts_free(manifest, nm);
    return r;
}

/* --repair, after the last page: how many pages the run committed and the last one's floor. */
static sqlq_result publish_end(const run_ctx *ctx, const sqlq_backfill *bf, sqlq_error *err)
{
    if (!ctx->s->repair)
        return SQLQ_OK;
    const sqlq_checkpoint *cp = sqlq_backfill_checkpoint(bf);
    sqlq_manifest_head h = manifest_head(ctx, bf);
    char *text = NULL;
    sqlq_result r = sqlq_msg_manifest_end(
        &h, cp->batch_id, checkpoint_version(cp), &text, err);
    sqlq_put_item item = {0};
    item.body = text;
    item.len = text ? strlen(text) : 0;
    sqlq_put_options po = {0};
    po.ttl_s = -1;
    if (r == SQLQ_OK && sqlq_queue_put_many(ctx->qc, ctx->s->queue, &item, 1, 1, &po) != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_CANCELLED, false, "publishing was interrupted");
    if (r == SQLQ_OK && item.result != SQLQ_OK)
        r = sqlq_error_set(err, item.result, item.error.transient, "put failed: %s",
                           item.error.message);
    free(text);
    if (r == SQLQ_OK)
        SQLQ_INFO("backfill_manifest_end", "table=%s run=%lld pages=%lld", ctx->s->table,
                  (long long)cp->run_id, (long long)cp->batch_id);
    return r;
}

static void progress(run_ctx *ctx, const sqlq_checkpoint *cp, bool final)
{
    if (!ctx->tty)
        return;
    int64_t ms = sqlq_clock_wall_ms() - ctx->started_ms;
    double rate = ms > 0 ? (double)ctx->rows_this_run * 1000.0 / (double)ms : 0.0;
    if (ctx->total > 0)
        fprintf(stderr, "\rbackfill %s: %lld / %lld rows (%lld%%), %.0f rows/s   ", ctx->s->table,
                (long long)cp->rows_done, (long long)ctx->total,
                (long long)(cp->rows_done * 100 / (ctx->total > cp->rows_done ? ctx->total : cp->rows_done)),
                rate);
    else
        fprintf(stderr, "\rbackfill %s: %lld rows, %.0f rows/s   ", ctx->s->table,
                (long long)cp->rows_done, rate);
    if (final)
        fputc('\n', stderr);
}

static int pages(run_ctx *ctx, sqlq_backfill *bf)
{
    for (;;) {
        if (sqlq_stop_flag) {
            progress(ctx, sqlq_backfill_checkpoint(bf), true);
            fprintf(stderr, "sqlq backfill: interrupted after %lld rows; run the same command to "
                            "resume\n", (long long)sqlq_backfill_checkpoint(bf)->rows_done);
            return SQLQ_EXIT_FAILED;
        }
        sqlq_backfill_page page;
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_result r = sqlq_backfill_next(bf, &page, &err);
        if (r == SQLQ_OK && page.count == 0) {
            sqlq_backfill_page_free(&page);
            r = publish_end(ctx, bf, &err);
            if (r == SQLQ_OK)
                r = sqlq_backfill_finish(bf, &err);
            progress(ctx, sqlq_backfill_checkpoint(bf), true);
            if (r == SQLQ_OK)
                return SQLQ_EXIT_OK;
        }
        if (r == SQLQ_OK)
            r = publish(ctx, bf, &page, &err);
        if (r == SQLQ_OK)
            r = sqlq_backfill_commit(bf, &page, &err);
        if (r == SQLQ_OK)
            ctx->rows_this_run += (int64_t)page.count;
        sqlq_backfill_page_free(&page);
        if (r != SQLQ_OK) {
            char line[768];
            sqlq_error_format(&err, line, sizeof(line));
            progress(ctx, sqlq_backfill_checkpoint(bf), true);
            fprintf(stderr, "sqlq backfill: %s\nrun the same command to resume after row %lld\n",
                    line, (long long)sqlq_backfill_checkpoint(bf)->rows_done);
            return SQLQ_EXIT_FAILED;
        }
        progress(ctx, sqlq_backfill_checkpoint(bf), false);
    }
}

/* Missing or malformed settings: message printed, false. */
static bool check(const backfill_settings *s)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    const char *missing = !s->db      ? "db (--db or SQLQ_DB_CONNECTION)"
                          : !s->table ? "table (--table)"
                          : !s->queue ? "queue (--queue)"
                                      : NULL; /* the queue connection: sqlq_cli_queue_open */
    if (missing) {
        fprintf(stderr, "sqlq backfill: %s is not set\n", missing);
        return false;
    }
    if (!sqlq_queue_name_valid(s->queue, &err)) {
        fprintf(stderr, "sqlq backfill: --queue '%s' is not allowed (%s)\n", s->queue, err.message);
        return false;
    }
    size_t n = s->bridge_name ? strlen(s->bridge_name) : 0;
    if (n < 1 || n > 119) {
        fprintf(stderr, "sqlq backfill: --bridge-name must be 1..119 characters\n");
        return false;
    }
    return true;
}

static int run(const backfill_settings *s, sqlq_queue_client *qc, sqlq_db *db)
{
    sqlq_backfill_config cfg;
    sqlq_backfill_config_default(&cfg);
    cfg.name = s->bridge_name;
    cfg.table = s->table;
    cfg.where = s->where;
    cfg.page_size = (int)s->batch_size;
    cfg.lease_s = (int)s->lease_s;
    cfg.restart = s->restart;
    cfg.cursor_column = s->cursor_column;
    cfg.key_columns = s->key_columns && *s->key_columns ? s->key_columns : NULL;
    sqlq_backfill *bf = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_clock clock = sqlq_clock_system(&sqlq_stop_flag);
    bool told = false;
    while (sqlq_backfill_open(db, NULL, &cfg, &bf, &err) == SQLQ_E_CONFLICT && s->wait) {
        if (!told)
            fprintf(stderr, "sqlq backfill: %s\nwaiting for that lease to end (Ctrl-C to stop)\n",
                    err.message);
        told = true;
        sqlq_error_clear(&err);
        if (!sqlq_clock_sleep_ms(&clock, 1000)) {
            sqlq_error_set(&err, SQLQ_E_CANCELLED, false, "interrupted while waiting");
            break;
        }
    }
    if (!bf) {
        fprintf(stderr, "sqlq backfill: %s\n", err.message);
        return err.code == SQLQ_E_INVALID ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED;
    }
    const sqlq_checkpoint *cp = sqlq_backfill_checkpoint(bf);
    if (cp->finished) {
        fprintf(stderr, "sqlq backfill: backfill '%s' of %s already finished (%lld rows); pass "
                        "--restart to publish every row again\n",
                s->bridge_name, sqlq_backfill_table_key(bf), (long long)cp->rows_done);
        sqlq_backfill_close(bf);
        return SQLQ_EXIT_OK;
    }
    run_ctx ctx = {.s = s, .qc = qc, .encoding = sqlq_queue_client_encoding(qc),
                   .batch = strcmp(s->format, "batch") == 0, .total = -1,
                   .tty = isatty(STDERR_FILENO) == 1, .started_ms = sqlq_clock_wall_ms()};
    if (ctx.tty && sqlq_backfill_count(bf, &ctx.total, &err) != SQLQ_OK)
        ctx.total = -1;
    sqlq_backfill_version_source vs = sqlq_backfill_version_source_of(bf);
    SQLQ_INFO("backfill_versions", "table=%s source=%s", sqlq_backfill_table_key(bf),
              sqlq_backfill_version_source_name(vs));
    if (s->repair && vs != SQLQ_BACKFILL_VERSION_CHANGE_LOG &&
        vs != SQLQ_BACKFILL_VERSION_CHANGE_TRACKING) {
        fprintf(stderr, "sqlq backfill: --repair needs the table's change log or change tracking "
                        "(its versions say which replica rows are older than the backfill); "
                        "the source here is %s\n",
                sqlq_backfill_version_source_name(vs));
        sqlq_backfill_close(bf);
        return SQLQ_EXIT_USAGE;
    }
    int rc = pages(&ctx, bf);
    int64_t ms = sqlq_clock_wall_ms() - ctx.started_ms;
    SQLQ_INFO("backfill_done", "table=%s name=%s rows=%lld rows_total=%lld ms=%lld rows_per_s=%.0f "
              "finished=%s", sqlq_backfill_table_key(bf), s->bridge_name,
              (long long)ctx.rows_this_run, (long long)sqlq_backfill_checkpoint(bf)->rows_done,
              (long long)ms, ms > 0 ? (double)ctx.rows_this_run * 1000.0 / (double)ms : 0.0,
              rc == SQLQ_EXIT_OK ? "yes" : "no");
    sqlq_backfill_close(bf);
    return rc;
}

int sqlq_cmd_backfill(int argc, char **argv)
{
    backfill_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int rc = sqlq_config_load_or_exit(&backfill_spec, &s, argc, argv, &res);
    if (rc >= 0)
        return rc;
    sqlq_common_settings_apply(&s.common);
    rc = check(&s) ? SQLQ_EXIT_OK : SQLQ_EXIT_USAGE;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_cli_queue q;
    sqlq_db *db = NULL;
    bool created = false;
    if (rc == SQLQ_EXIT_OK) {
        int code = sqlq_cli_queue_open("backfill", &s.common, SQLQ_CLI_PATIENT, &q);
        rc = code >= 0 ? code : SQLQ_EXIT_OK;
    } else {
        memset(&q, 0, sizeof(q));
    }
    if (rc == SQLQ_EXIT_OK && (sqlq_queue_create(q.client, s.queue, &created, &err) != SQLQ_OK ||
                               sqlq_db_connect(s.db, &db, &err) != SQLQ_OK)) {
        char line[768];
        sqlq_error_format(&err, line, sizeof(line));
        fprintf(stderr, "sqlq backfill: %s\n", line);
        rc = err.code == SQLQ_E_INVALID ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED;
    }
    if (rc == SQLQ_EXIT_OK)
        rc = run(&s, q.client, db);
    sqlq_db_close(db);
    sqlq_cli_queue_close(&q);
    sqlq_config_free(&backfill_spec, &s, &res);
    return rc;
}
