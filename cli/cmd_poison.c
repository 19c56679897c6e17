/* cmd_poison: `sqlq poison list|show|requeue|export|import|purge`: look at and drain
 * {queue}-poison. Every move puts first and deletes after: a crash duplicates, never loses. */
#include "cli.h"
#include "clock.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "poison.h"
#include "poison_report.h"
#include "poison_view.h"
#include "queue_client.h"
#include "shard_set.h"
#include "term_text.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct poison_settings {
    long long limit;
    bool json;
    bool all;
    char *id;
    char *where;
    bool dry_run;
    long long visibility_s;
    bool delete_after;
    bool yes;
    long long shards;
    sqlq_common_settings common;
} poison_settings;

/* list, requeue and purge take a shard set as QUEUE (docs/scaling.md). */
#define SHARDS_SETTING(S)                                                                          \
    SQLQ_SETTING_INT(S, shards, "shards", NULL, "0", 0, 256,                                       \
                     "QUEUE names a shard set: QUEUE-0 … QUEUE-(N-1), each in turn (a comma-"     \
                     "separated QUEUE list works too)")

#define S poison_settings
static const sqlq_setting list_table[] = {
    SQLQ_SETTING_INT(S, limit, "limit", NULL, "32", 1, 32,
                     "messages to show (peek: the service shows at most 32)"),
    SQLQ_SETTING_BOOL(S, json, "json", NULL, "false", "JSON lines with the whole body"),
    SHARDS_SETTING(S),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting requeue_table[] = {
    SQLQ_SETTING_BOOL(S, all, "all", NULL, "false", "move every message"),
    SQLQ_SETTING_STR(S, id, "id", NULL, NULL,
                     "move the message with this id (more ids: comma-separated, or as further "
                     "arguments)"),
    SQLQ_SETTING_STR(S, where, "where", NULL, NULL,
                     "FIELD=VALUE: move messages whose decoded JSON body has this top-level field "
                     "value"),
    SQLQ_SETTING_BOOL(S, dry_run, "dry_run", NULL, "false",
                      "count what would move; change nothing"),
    SQLQ_SETTING_INT(S, limit, "limit", NULL, "0", 0, 1000000000000LL,
                     "move at most this many (0 = no limit)"),
    SQLQ_SETTING_INT(S, visibility_s, "visibility_s", NULL, "30", 1, 3600,
                     "how long messages looked at stay hidden if this run dies (others are made "
                     "visible again at the end)"),
    SHARDS_SETTING(S),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting export_table[] = {
    SQLQ_SETTING_BOOL(S, delete_after, "delete", NULL, "false",
                      "delete each message once its line is flushed and fsync'ed"),
    SQLQ_SETTING_INT(S, limit, "limit", NULL, "0", 0, 1000000000000LL,
                     "export at most this many (0 = all)"),
    SQLQ_SETTING_INT(S, visibility_s, "visibility_s", NULL, "30", 1, 3600,
                     "how long messages stay hidden if this run dies"),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting import_table[] = {SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting purge_table[] = {
    SQLQ_SETTING_BOOL(S, yes, "yes", NULL, "false",
                      "do not ask (required when stdin is not a terminal)"),
    SHARDS_SETTING(S),
    SQLQ_COMMON_SETTINGS(S, common)};
#undef S

typedef struct ctx {
    poison_settings s;
    sqlq_config_result res;
    sqlq_cli_queue q; /* account, client and encoding */
    char queue[64];  /* the main queue */
    char poison[64]; /* its poison queue */
    const char *name;
} ctx;

typedef struct subcommand {
    sqlq_config_spec spec;
    int (*run)(ctx *c);
    int queue_arg; /* which positional names the queue */
} subcommand;

#define SPEC(cmd, usage, summary, table, lo, hi)                                                   \
    {                                                                                              \
        cmd, usage, summary, table, sizeof(table) / sizeof(table[0]), lo, hi                       \
    }

static int fail(const ctx *c, const sqlq_error *err)
{
    char raw[800], line[800];
    sqlq_error_format(err, raw, sizeof(raw));
    sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
    fprintf(stderr, "sqlq poison %s: %s\n", c->name, line);
    return SQLQ_EXIT_FAILED;
}

static int usage_error(const ctx *c, const char *msg)
{
    fprintf(stderr, "sqlq poison %s: %s\n(see sqlq poison %s --help)\n", c->name, msg, c->name);
    return SQLQ_EXIT_USAGE;
}

/* ---- progress on a terminal only ---- */

typedef struct progress {
    const char *what;
    uint64_t last_ms;
    bool shown;
} progress;

static void on_progress(void *ctx_, unsigned long long done)
{
    progress *p = ctx_;
    uint64_t now = sqlq_clock_mono_ms();
    if (p->shown && now - p->last_ms < 200)
        return;
    p->last_ms = now;
    p->shown = true;
    fprintf(stderr, "\r%s %llu...", p->what, done);
    fflush(stderr);
}

static sqlq_poison_progress_fn progress_fn(void)
{
    return isatty(STDERR_FILENO) ? on_progress : NULL;
}

static void progress_end(progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r\033[K");
}

/* ---- list and show ---- */

static void print_json_line(json_t *o)
{
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    sqlq_buf safe;
    sqlq_buf_init(&safe, 0);
    if (line && sqlq_term_text_json(line, &safe) == SQLQ_OK)
        puts(sqlq_buf_str(&safe));
    sqlq_buf_free(&safe);
    free(line);
    json_decref(o);
}

static bool wanted(const ctx *c, const sqlq_message *m, bool *found)
{
    if (c->res.npositional <= 1)
        return true;
    bool hit = false;
    for (size_t k = 1; k < c->res.npositional; k++) {
        if (strcmp(c->res.positional[k], m->id) == 0) {
            found[k] = true;
            hit = true;
        }
    }
    return hit;
}

/* Ids asked for that the peek did not show: named on stderr; the count of them. */
static size_t report_missing(const ctx *c, const bool *found, size_t shown)
{
    size_t missing = 0;
    for (size_t k = 1; k < c->res.npositional; k++) {
        if (found[k])
            continue;
        missing++;
        fprintf(stderr, "sqlq poison %s: message %s not found among the %zu visible message(s) "
                        "a peek of %s shows (at most 32; a message being moved is invisible)\n",
                c->name, c->res.positional[k], shown, c->poison);
    }
    return missing;
}

/* The poison queue does not exist: "nothing was ever poisoned" (exit 0) when the main queue
 * does, else a misspelled name is the likelier story (exit 1): a typo must not read as
 * success. With a queue-scoped SAS the main queue's properties may be unreadable: then 0. */
static int poison_queue_missing(const ctx *c, const char *verb)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_properties(c->q.client, c->queue, &props, &err) == SQLQ_E_NOT_FOUND) {
        fprintf(stderr,
                "sqlq poison %s: neither %s nor %s exists: check the queue name (a queue name "
                "is lowercase letters, digits and dashes)\n",
                c->name, c->queue, c->poison);
        return SQLQ_EXIT_FAILED;
    }
    fprintf(stderr, "%s does not exist: nothing was ever poisoned%s\n", c->poison, verb);
    return SQLQ_EXIT_OK;
}

static int run_list(ctx *c, bool show)
{
    sqlq_message_list list = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r =
        sqlq_queue_peek(c->q.client, c->poison, show ? 32 : (int)c->s.limit, &list, &err);
    if (r == SQLQ_E_NOT_FOUND && c->res.npositional <= 1) {
        sqlq_message_list_free(&list);
        return poison_queue_missing(c, "");
    }
    if (r != SQLQ_OK && r != SQLQ_E_NOT_FOUND)
        return fail(c, &err);
    bool *found = calloc(c->res.npositional + 1, sizeof(bool));
    if (!found) {
        sqlq_message_list_free(&list);
        return SQLQ_EXIT_FAILED;
    }
    if (!c->s.json && !show && list.count)
        sqlq_poison_view_print_header(stdout);
    size_t printed = 0;
    for (size_t i = 0; i < list.count && printed < (size_t)c->s.limit; i++) {
        const sqlq_message *m = &list.items[i];
        if (!wanted(c, m, found))
            continue;
        printed++;
        if (c->s.json)
            print_json_line(sqlq_poison_view_json(c->q.encoding, m));
        else if (show)
            sqlq_poison_view_print_show(stdout, c->q.encoding, m);
        else
            sqlq_poison_view_print_row(stdout, c->q.encoding, m);
    }
    size_t missing = report_missing(c, found, list.count);
    free(found);
    sqlq_queue_props props = {0};
    if (!c->s.json && r == SQLQ_OK &&
        sqlq_queue_properties(c->q.client, c->poison, &props, &err) == SQLQ_OK)
        fprintf(stderr, "%zu shown of about %lld in %s%s\n", printed, props.approximate_count,
                c->poison, props.approximate_count > 32 ? " (peek shows at most 32)" : "");
    sqlq_message_list_free(&list);
    return missing ? SQLQ_EXIT_FAILED : SQLQ_EXIT_OK;
}

static int cmd_list(ctx *c)
{
    return run_list(c, false);
}
static int cmd_show(ctx *c)
{
    return run_list(c, true);
}

/* ---- requeue ---- */

/* --id a,b plus further positional arguments: the list of ids (pointers into one copy). */
static char **collect_ids(ctx *c, char **copy, size_t *n)
{
    *n = 0;
    *copy = strdup(c->s.id ? c->s.id : "");
    char **ids = calloc(c->res.npositional + strlen(*copy) + 2, sizeof(char *));
    if (!*copy || !ids) {
        free(ids);
        return NULL;
    }
    char *save = NULL;
    for (char *t = strtok_r(*copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        ids[(*n)++] = t;
    for (size_t i = 1; i < c->res.npositional; i++)
        ids[(*n)++] = c->res.positional[i];
    return ids;
}

/* A dry run over at most 32 messages peeks (true); over more it has to receive: say so
 * before it does. False with err set when the service cannot be asked. */
static bool dry_run_peeks(const ctx *c, bool *peek, sqlq_error *err)
{
    sqlq_queue_props props = {0};
    sqlq_result r = sqlq_queue_properties(c->q.client, c->poison, &props, err);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        *peek = true;
        return true;
    }
    if (r != SQLQ_OK)
        return false;
    *peek = props.approximate_count <= 32;
    if (*peek)
        return true; /* a peek covers it: nothing changes */
    fprintf(stderr,
            "dry run: %s holds about %lld messages, more than the 32 a peek shows, so this dry "
            "run receives them: each one's dequeue count goes up by 1, it is hidden for up to "
            "--visibility-s %lld while the run looks (made visible again at the end) and the "
            "order of the queue may change. Nothing is put or deleted.\n",
            c->poison, props.approximate_count, c->s.visibility_s);
    return true;
}

/* --where FIELD=VALUE and --id into o (pointing into *where / *copy / *ids, which the caller
 * frees). -1 when fine, else the exit code after a usage error. */
static int parse_selection(ctx *c, sqlq_requeue_options *o, char **where, char **copy,
                           char ***ids)
{
    if (c->s.where) {
        *where = strdup(c->s.where);
        char *eq = *where ? strchr(*where, '=') : NULL;
        if (!eq || eq == *where) {
            free(*where);
            *where = NULL;
            return usage_error(c, "--where: expected FIELD=VALUE");
        }
        *eq = '\0';
        o->where_field = *where;
        o->where_value = eq + 1;
    }
    if (c->s.id) {
        *ids = collect_ids(c, copy, &o->nids);
        o->ids = (const char *const *)*ids;
        if (!*ids || o->nids == 0) {
            free(*where);
            free(*ids);
            free(*copy);
            *where = *copy = NULL;
            *ids = NULL;
            return usage_error(c, "--id: no message id given");
        }
    }
    return -1;
}

static int cmd_requeue(ctx *c)
{
    int modes = c->s.all + (c->s.id != NULL) + (c->s.where != NULL);
    if (modes != 1)
        return usage_error(c, "choose exactly one of --all, --id ID or --where FIELD=VALUE");
    if (c->res.npositional > 1 && !c->s.id)
        return usage_error(c, "extra arguments are message ids: use them with --id");
    sqlq_queue_props props = {0};
    sqlq_error perr;
    sqlq_error_clear(&perr);
    if (sqlq_queue_properties(c->q.client, c->poison, &props, &perr) == SQLQ_E_NOT_FOUND)
        return poison_queue_missing(c, ": nothing to requeue");
    sqlq_requeue_options o;
    sqlq_requeue_options_default(&o);
    o.all = c->s.all;
    o.dry_run = c->s.dry_run;
    o.limit = (unsigned long long)c->s.limit;
    o.visibility_s = (int)c->s.visibility_s;
    o.encoding = c->q.encoding;
    o.stop = &sqlq_stop_flag;
    char *where = NULL, *copy = NULL;
    char **ids = NULL;
    int code = parse_selection(c, &o, &where, &copy, &ids);
    if (code >= 0)
        return code;
    progress p = {.what = o.dry_run ? "matching" : "moved"};
    o.progress = progress_fn();
    o.progress_ctx = &p;
    sqlq_poison_counts n = {.remaining = -1};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = SQLQ_OK;
    if (o.dry_run && !dry_run_peeks(c, &o.peek, &err))
        r = err.code;
    else
        r = sqlq_poison_requeue(c->q.client, c->poison, c->queue, &o, &n, &err);
    progress_end(&p);
    free(where);
    free(ids);
    free(copy);
    sqlq_poison_run run = {.from = c->poison, .to = c->queue, .result = r, .err = &err,
                           .dry_run = o.dry_run, .bounded = o.limit || o.nids,
                           .visibility_s = o.visibility_s, .started = n.started};
    code = sqlq_poison_report_requeue(stdout, &run, &n);
    if (o.nids && n.matched < o.nids) {
        /* Not found only when the whole queue was looked at: a run that stopped (an outage)
         * says the ids are still to do, not gone. */
        if (r == SQLQ_OK)
            printf("%llu of the %zu id(s) given were not found in %s\n",
                   (unsigned long long)o.nids - n.matched, o.nids, c->poison);
        else
            printf("%llu of the %zu id(s) given were not requeued: the run stopped before it "
                   "found them (they stay in %s; run the command again)\n",
                   (unsigned long long)o.nids - n.matched, o.nids, c->poison);
        code = SQLQ_EXIT_FAILED;
    }
    return code;
}

/* ---- export and import ---- */

/* export --delete: the ids of exported messages that were not deleted. */
typedef struct kept_ids {
    sqlq_buf kept, maybe;
} kept_ids;

static void on_kept(void *arg, const char *id, bool maybe)
{
    kept_ids *k = arg;
    sqlq_buf *b = maybe ? &k->maybe : &k->kept;
    if (sqlq_buf_adds(b, id) != SQLQ_OK || sqlq_buf_addc(b, '\n') != SQLQ_OK)
        fprintf(stderr, "sqlq poison export: out of memory listing the ids not deleted\n");
}

static int cmd_export(ctx *c)
{
    const char *path = c->res.positional[1];
    sqlq_queue_props props = {0};
    sqlq_error perr;
    sqlq_error_clear(&perr);
    if (sqlq_queue_properties(c->q.client, c->poison, &props, &perr) == SQLQ_E_NOT_FOUND)
        return poison_queue_missing(c, ": nothing to export (no file written)");
    bool to_stdout = strcmp(path, "-") == 0;
    if (to_stdout && c->s.delete_after)
        return usage_error(c, "--delete needs a real file (stdout cannot be fsync'ed)");
    FILE *f = stdout;
    if (!to_stdout) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            return usage_error(c, "the export file exists: choose a new name (export never "
                                  "overwrites)");
        if (fd < 0 || !(f = fdopen(fd, "w"))) {
            fprintf(stderr, "sqlq poison export: %s: %s\n", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return SQLQ_EXIT_FAILED;
        }
    }
    sqlq_export_options o = {.delete_after = c->s.delete_after,
                             .limit = (unsigned long long)c->s.limit,
                             .visibility_s = (int)c->s.visibility_s,
                             .encoding = c->q.encoding,
                             .stop = &sqlq_stop_flag};
    kept_ids k;
    sqlq_buf_init(&k.kept, 0);
    sqlq_buf_init(&k.maybe, 0);
    o.kept = on_kept;
    o.kept_ctx = &k;
    progress p = {.what = "exported"};
    o.progress = progress_fn();
    o.progress_ctx = &p;
    sqlq_poison_counts n;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_poison_export(c->q.client, c->poison, f, &o, &n, &err);
    progress_end(&p);
    if (!to_stdout && fclose(f) != 0 && r == SQLQ_OK)
        r = sqlq_error_set(&err, SQLQ_E_IO, false, "close %s: %s", path, strerror(errno));
    struct stat st;
    bool removed = !to_stdout && n.moved == 0 && stat(path, &st) == 0 && st.st_size == 0 &&
                   unlink(path) == 0;
    sqlq_poison_run run = {.from = c->poison, .to = path, .result = r, .err = &err,
                           .delete_after = o.delete_after, .bounded = o.limit != 0,
                           .visibility_s = o.visibility_s, .removed = removed,
                           .kept_ids = sqlq_buf_str(&k.kept), .maybe_ids = sqlq_buf_str(&k.maybe)};
    int code = sqlq_poison_report_export(to_stdout ? stderr : stdout, &run, &n);
    sqlq_buf_free(&k.kept);
    sqlq_buf_free(&k.maybe);
    return code;
}

/* Standard input in a file of its own (TMPDIR), so that a run that stops half-way can name a
 * file the rest can be imported from. NULL (said why) when it cannot be kept. */
static FILE *save_stdin(char *path, size_t size)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/sqlq-import-XXXXXX.jsonl", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(path, 6);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    char chunk[65536];
    size_t got;
    bool ok = f != NULL;
    while (ok && (got = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        ok = fwrite(chunk, 1, got, f) == got;
    if (ok && !ferror(stdin) && fflush(f) == 0 && fseeko(f, 0, SEEK_SET) == 0)
        return f;
    fprintf(stderr, "sqlq poison import: cannot keep standard input in %s: %s\n", path,
            strerror(errno));
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    if (fd >= 0)
        unlink(path);
    return NULL;
}

static int cmd_import(ctx *c)
{
    const char *path = c->res.positional[0];
    bool from_stdin = strcmp(path, "-") == 0;
    char saved[1024] = "";
    FILE *f = from_stdin ? save_stdin(saved, sizeof(saved)) : fopen(path, "r");
    if (!f && !from_stdin)
        fprintf(stderr, "sqlq poison import: %s: %s\n", path, strerror(errno));
    if (!f)
        return SQLQ_EXIT_FAILED;
    progress p = {.what = "imported"};
    sqlq_poison_counts n;
    sqlq_error err;
    sqlq_error_clear(&err);
    /* import names the target queue exactly (main or poison): no -poison is added. */
    sqlq_result r = sqlq_poison_import(c->q.client, f, c->res.positional[1], &sqlq_stop_flag,
                                       progress_fn(), &p, &n, &err);
    progress_end(&p);
    fclose(f);
    bool named = false;
    sqlq_poison_run run = {.from = path, .to = c->res.positional[1], .result = r, .err = &err,
                           .file = from_stdin ? saved : path, .file_is_copy = from_stdin,
                           .file_named = &named};
    int code = sqlq_poison_report_import(stdout, &run, &n);
    if (from_stdin && !named)
        unlink(saved); /* kept only when the report names it for the rest */
    return code;
}

/* ---- purge ---- */

static bool confirm(const ctx *c)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_properties(c->q.client, c->poison, &props, &err) != SQLQ_OK)
        props.approximate_count = -1;
    fprintf(stderr, "Delete all (about %lld) messages in %s? This cannot be undone. [y/N] ",
            props.approximate_count, c->poison);
    fflush(stderr);
    char answer[16] = "";
    if (!fgets(answer, sizeof(answer), stdin))
        return false;
    return answer[0] == 'y' || answer[0] == 'Y';
}

static int cmd_purge(ctx *c)
{
    if (!c->s.yes) {
        if (!isatty(STDIN_FILENO))
            return usage_error(c, "refusing to purge without --yes when stdin is not a terminal");
        if (!confirm(c)) {
            fprintf(stderr, "not purged\n");
            return SQLQ_EXIT_FAILED;
        }
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_queue_clear(c->q.client, c->poison, &err);
    if (r == SQLQ_E_NOT_FOUND)
        return poison_queue_missing(c, ": nothing to purge");
    if (r != SQLQ_OK)
        return fail(c, &err);
    printf("purged %s\n", c->poison);
    return SQLQ_EXIT_OK;
}

/* ---- dispatch ---- */

static const subcommand subcommands[] = {
    {SPEC("poison list", "sqlq poison list QUEUE [--limit N] [--json]",
          "Peek at QUEUE-poison without disturbing it: id, insertion time, dequeue count and the "
          "decoded body, or the TEXT as stored when it does not decode, cut short on a character "
          "boundary (whole with --json: text as stored, body decoded). Control characters are "
          "shown escaped (\\x1b, \\u009b).",
          list_table, 1, 1),
     cmd_list, 0},
    {SPEC("poison show", "sqlq poison show QUEUE [ID...] [--limit N] [--json]",
          "Peek at QUEUE-poison and print each message in full: the text as stored and the body "
          "decoded from it (exact bytes, control characters escaped), or only the given ids "
          "among the first 32 (an id not found: exit 1).",
          list_table, 1, 64),
     cmd_show, 0},
    {SPEC("poison requeue",
          "sqlq poison requeue QUEUE (--all | --id ID[,ID...] [ID...] | --where FIELD=VALUE) "
          "[--dry-run] [--limit N]",
          "Move messages from QUEUE-poison back to QUEUE: put the same text first, then delete "
          "it from the poison queue, so a crash can duplicate a message but never lose one. "
          "Safe to run again. One run covers what was in the poison queue when it started: "
          "messages poisoned again meanwhile are counted and left for the next run. --where "
          "matches a top-level field of the decoded JSON body: strings as text, numbers by value "
          "(19.99 = 1.999e1), true/false/null as written. A change the bridge poisoned "
          "({\"sqlq_poison\":1, \"reason\", \"message\"}) goes back as the exact bytes of its "
          "message and is matched on the message's fields and on reason; anything else moves "
          "byte-identical. --dry-run peeks when the queue holds at most 32, else it says what it "
          "changes. Exit 1 when the run was interrupted, stopped by an outage or left anything.",
          requeue_table, 1, 100000),
     cmd_requeue, 0},
    {SPEC("poison export", "sqlq poison export QUEUE FILE.jsonl [--delete] [--limit N]",
          "Write the messages of QUEUE-poison to a new file (or - for stdout), one JSON line each: "
          "id, insertion_time, expiration_time, dequeue_count, text (as stored), body (decoded). "
          "With --delete each message is deleted only after its line is flushed and fsync'ed. A "
          "write error (disk full) cuts the file back to its last whole line and deletes nothing "
          "of that batch. Exit 1 unless every message was exported (and deleted).",
          export_table, 2, 2),
     cmd_export, 0},
    {SPEC("poison import", "sqlq poison import FILE.jsonl QUEUE",
          "Put each line's text, verbatim and never expiring, into QUEUE exactly as named (write "
          "QUEUE-poison to refill a poison queue). Every line is checked before anything is put; "
          "a UTF-8 byte order mark is skipped. FILE may be - for stdin. Interrupted: exit 1, "
          "with how many are in, how many may be (the batch in flight) and the line to resume "
          "from.",
          import_table, 2, 2),
     cmd_import, 1},
    {SPEC("poison purge", "sqlq poison purge QUEUE [--yes]",
          "Delete every message in QUEUE-poison. Asks first on a terminal; refuses without --yes "
          "when stdin is not a terminal.",
          purge_table, 1, 1),
     cmd_purge, 0},
};
#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

const sqlq_config_spec *sqlq_cmd_poison_spec(size_t i)
{
    return i < NSUB ? &subcommands[i].spec : NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sqlq poison SUBCOMMAND [options]   (sqlq poison SUBCOMMAND --help for "
               "each)\n\nsubcommands:\n");
    for (size_t i = 0; i < NSUB; i++)
        fprintf(f, "  %s\n", subcommands[i].spec.usage);
    fprintf(f, "\nQUEUE is the main queue (orders); its poison queue is QUEUE-poison (naming\n"
               "orders-poison itself works too). The connection comes from --queue-connection,\n"
               "$SQLQ_QUEUE_CONNECTION or $AzureWebJobsStorage (each also as _FILE).\n"
               "exit codes: 0 ok, 1 the operation failed or did not finish (interrupted, outage,\n"
               "partial: the run says what was done, what may have been, what remains),\n"
               "2 usage or configuration error (see docs/consumer.md)\n");
}

/* QUEUE or QUEUE-poison -> (main, poison). */
static bool resolve_names(ctx *c, const char *q, sqlq_error *err)
{
    if (!sqlq_queue_name_valid(q, err))
        return false;
    size_t len = strlen(q);
    if (len > 7 && strcmp(q + len - 7, "-poison") == 0) {
        snprintf(c->poison, sizeof(c->poison), "%s", q);
        snprintf(c->queue, sizeof(c->queue), "%.*s", (int)(len - 7), q);
        return true;
    }
    snprintf(c->queue, sizeof(c->queue), "%s", q);
    if (!sqlq_queue_poison_name(q, c->poison, sizeof(c->poison))) {
        sqlq_error_set(err, SQLQ_E_INVALID, false, "%s leaves no room for a -poison queue", q);
        return false;
    }
    return true;
}

static int connect_and_run_one(const subcommand *sub, ctx *c, const char *queue)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (!resolve_names(c, queue, &err) ||
        (sub->run == cmd_import && !sqlq_queue_name_valid(c->res.positional[1], &err)))
        return usage_error(c, err.message);
    int code = sqlq_cli_queue_open(sub->spec.command, &c->s.common, SQLQ_CLI_OPERATOR, &c->q);
    const char *needed = sub->run == cmd_import ? c->res.positional[1] : c->poison;
    if (code < 0 && !sqlq_account_reaches(c->q.account, needed, &err)) {
        fprintf(stderr, "sqlq %s: %s\n", sub->spec.command, err.message);
        return SQLQ_EXIT_USAGE; /* a queue-scoped SAS URL reaches only its own queue */
    }
    return code >= 0 ? code : sub->run(c);
}

/* QUEUE, or a shard set (--shards N, or a comma-separated list): the subcommand on each queue
 * in turn, each headed by "== QUEUE"; the exit code is the worst of them. */
static int connect_and_run(const subcommand *sub, ctx *c)
{
    sqlq_common_settings_apply(&c->s.common);
    const char *spec = c->res.positional[sub->queue_arg];
    if (c->s.shards < 2 && !strchr(spec, ','))
        return connect_and_run_one(sub, c, spec);
    if (sub->run == cmd_export || sub->run == cmd_import)
        return usage_error(c, "export and import take one queue (a file per shard)");
    sqlq_shard_set set;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_shard_set_parse(spec, c->s.shards, NULL, 0, &set, &err) != SQLQ_OK)
        return usage_error(c, err.message);
    int worst = SQLQ_EXIT_OK;
    for (size_t i = 0; i < set.count && !sqlq_stop_flag; i++) {
        if (set.accounts[i]) {
            worst = usage_error(c, "a shard set here names no account (account:queue): run once "
                                   "per account, each with its queue connection");
            break;
        }
        printf("== %s\n", set.queues[i]);
        fflush(stdout);
        int code = connect_and_run_one(sub, c, set.queues[i]);
        sqlq_cli_queue_close(&c->q);
        worst = code > worst ? code : worst;
    }
    sqlq_shard_set_free(&set);
    return worst;
}

static const char *subcommand_name(const void *names, size_t i)
{
    (void)names;
    return subcommands[i].spec.command + strlen("poison ");
}

int sqlq_cmd_poison(int argc, char **argv)
{
    int code = SQLQ_EXIT_USAGE;
    int pick = sqlq_cli_pick("poison", argc, argv, subcommand_name, NULL, NSUB, usage, &code);
    if (pick < 0)
        return code;
    const subcommand *sub = &subcommands[pick];
    ctx c;
    memset(&c, 0, sizeof(c));
    c.name = argv[1];
    code = sqlq_config_load_or_exit(&sub->spec, &c.s, argc - 1, argv + 1, &c.res);
    if (code < 0)
        code = connect_and_run(sub, &c);
    sqlq_cli_queue_close(&c.q);
    sqlq_config_free(&sub->spec, &c.s, &c.res);
    return code;
}
