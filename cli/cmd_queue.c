/* cmd_queue: `sqlq queue …`, queue administration and message tools on the command line. */
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "queue_client.h"
#include "term_text.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* put --count N sends in chunks of this many items (results are kept per chunk). */
#define PUT_CHUNK 4096
#define MAX_STDIN_BODY ((size_t)1024 * 1024)

typedef struct queue_settings {
    long long count; /* put: copies; peek and get: the older spelling of limit (0 = not given) */
    long long limit; /* peek and get: messages at most (0 = not given: 1) */
    long long in_flight;
    long long visibility_s;
    long long ttl_s;
    bool raw;
    char *prefix;
    sqlq_common_settings common;
} queue_settings;

#define S queue_settings
static const sqlq_setting common_table[] = {SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting list_table[] = {
    SQLQ_SETTING_STR(S, prefix, "prefix", NULL, NULL, "only queues whose names start with this"),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting put_table[] = {
    SQLQ_SETTING_INT(S, count, "count", NULL, "1", 1, 100000000,
                     "put this many copies (a benchmark or load generator)"),
    SQLQ_SETTING_INT(S, in_flight, "in_flight", NULL, "16", 1, 64,
                     "requests on the wire at once when --count > 1"),
    SQLQ_SETTING_INT(S, visibility_s, "visibility_s", NULL, "0", 0, 604800,
                     "seconds before the message becomes visible"),
    SQLQ_SETTING_INT(S, ttl_s, "ttl_s", NULL, "0", -1, 9223372036854775807LL,
                     "time to live in seconds; 0 = service default (7 days), -1 = never expires"),
    SQLQ_COMMON_SETTINGS(S, common)};
/* "At most N messages" is --limit in every queue and poison command; peek and get still
 * accept --count, the spelling their --help and scripts used. */
#define LIMIT_ALIAS_HELP "the same as --limit (the older spelling, still accepted)"
static const sqlq_setting peek_table[] = {
    SQLQ_SETTING_INT(S, limit, "limit", NULL, NULL, 1, 32,
                     "messages to show, at most (1..32, the most one peek returns); unset: 1"),
    SQLQ_SETTING_INT(S, count, "count", NULL, NULL, 1, 32, LIMIT_ALIAS_HELP),
    SQLQ_SETTING_BOOL(S, raw, "raw", NULL, "false", "show MessageText as stored, not decoded"),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting get_table[] = {
    SQLQ_SETTING_INT(S, limit, "limit", NULL, NULL, 1, 32,
                     "messages to receive, at most (1..32, the most one get returns); unset: 1"),
    SQLQ_SETTING_INT(S, count, "count", NULL, NULL, 1, 32, LIMIT_ALIAS_HELP),
    SQLQ_SETTING_INT(S, visibility_s, "visibility_s", NULL, "30", 1, 604800,
                     "seconds the received messages stay hidden"),
    SQLQ_SETTING_BOOL(S, raw, "raw", NULL, "false", "show MessageText as stored, not decoded"),
    SQLQ_COMMON_SETTINGS(S, common)};
static const sqlq_setting update_table[] = {
    SQLQ_SETTING_INT(S, visibility_s, "visibility_s", NULL, "0", 0, 604800,
                     "seconds until the message is visible again (0 = at once)"),
    SQLQ_COMMON_SETTINGS(S, common)};
#undef S

typedef struct ctx {
    queue_settings s;
    sqlq_config_result res;
    sqlq_cli_queue q; /* account and client */
    const char *name; /* subcommand */
} ctx;

typedef struct subcommand {
    sqlq_config_spec spec;
    int (*run)(ctx *c);
} subcommand;

static int fail(ctx *c, const sqlq_error *err)
{
    char raw[800], line[800];
    sqlq_error_format(err, raw, sizeof(raw));
    sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
    fprintf(stderr, "sqlq queue %s: %s\n", c->name, line);
    return SQLQ_EXIT_FAILED;
}

static const char *arg(const ctx *c, size_t i)
{
    return i < c->res.npositional ? c->res.positional[i] : NULL;
}

static void iso_time(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, size, "%s", "");
}

static void print_json(json_t *o)
{
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    sqlq_buf safe; /* message bodies may hold controls a terminal would obey */
    sqlq_buf_init(&safe, 0);
    if (line && sqlq_term_text_json(line, &safe) == SQLQ_OK)
        puts(sqlq_buf_str(&safe));
    sqlq_buf_free(&safe);
    free(line);
    json_decref(o);
}

static void set_time(json_t *o, const char *key, int64_t t)
{
    char iso[32];
    iso_time(t, iso, sizeof(iso));
    if (iso[0])
        json_object_set_new(o, key, json_string(iso));
}

/* The body as a JSON string when it is UTF-8, else as base64. */
static void set_body(ctx *c, json_t *o, const sqlq_message *m)
{
    if (c->s.raw) {
        json_object_set_new(o, "text", json_stringn(m->text ? m->text : "", m->text_len));
        return;
    }
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_encoding enc = sqlq_queue_client_encoding(c->q.client);
    if (sqlq_codec_decode(enc, m->text ? m->text : "", m->text_len, &body, &err) != SQLQ_OK) {
        json_t *text = json_stringn(m->text ? m->text : "", m->text_len);
        json_object_set_new(o, "text", text ? text : json_null());
        json_object_set_new(o, "decode_error", json_string(err.message));
    } else {
        json_t *s = json_stringn(sqlq_buf_str(&body), body.len);
        if (s) {
            json_object_set_new(o, "body", s);
        } else { /* binary: show the bytes as base64 */
            sqlq_buf b64;
            sqlq_buf_init(&b64, 0);
            if (sqlq_codec_encode(SQLQ_ENCODING_BASE64, body.data, body.len, &b64, &err) == SQLQ_OK)
                json_object_set_new(o, "body_base64", json_string(sqlq_buf_str(&b64)));
            sqlq_buf_free(&b64);
        }
    }
    sqlq_buf_free(&body);
}

static void print_message(ctx *c, const sqlq_message *m, bool with_body)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(m->id ? m->id : ""));
    if (with_body)
        json_object_set_new(o, "dequeue_count", json_integer(m->dequeue_count));
    set_time(o, "insertion_time", m->insertion_time);
    set_time(o, "expiration_time", m->expiration_time);
    set_time(o, "time_next_visible", m->next_visible_time);
    if (m->pop_receipt)
        json_object_set_new(o, "pop_receipt", json_string(m->pop_receipt));
    if (with_body)
        set_body(c, o, m);
    print_json(o);
}

static int run_create(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    bool created = false;
    if (sqlq_queue_create(c->q.client, arg(c, 0), &created, &err) != SQLQ_OK)
        return fail(c, &err);
    printf("%s %s\n", created ? "created" : "exists", arg(c, 0));
    return SQLQ_EXIT_OK;
}

static int run_delete(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_delete(c->q.client, arg(c, 0), &err) != SQLQ_OK)
        return fail(c, &err);
    printf("deleted %s\n", arg(c, 0));
    return SQLQ_EXIT_OK;
}

static int run_clear(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_clear(c->q.client, arg(c, 0), &err) != SQLQ_OK)
        return fail(c, &err);
    printf("cleared %s\n", arg(c, 0));
    return SQLQ_EXIT_OK;
}

static int run_list(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    char **names = NULL;
    size_t n = 0;
    if (sqlq_queue_list(c->q.client, c->s.prefix, &names, &n, &err) != SQLQ_OK)
        return fail(c, &err);
    for (size_t i = 0; i < n; i++) {
        char safe[256]; /* names come from the service: shown escaped */
        sqlq_term_text_line(names[i], safe, sizeof(safe));
        puts(safe);
    }
    sqlq_queue_names_free(names, n);
    return SQLQ_EXIT_OK;
}

static int run_stats(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    const char *q = arg(c, 0);
    sqlq_queue_props p;
    if (sqlq_queue_properties(c->q.client, q, &p, &err) != SQLQ_OK)
        return fail(c, &err);
    json_t *o = json_object();
    json_object_set_new(o, "queue", json_string(q));
    json_object_set_new(o, "approximate_count", json_integer(p.approximate_count));
    char poison[80];
    if (sqlq_queue_poison_name(q, poison, sizeof(poison))) {
        sqlq_queue_props pp;
        sqlq_result r = sqlq_queue_properties(c->q.client, poison, &pp, &err);
        json_object_set_new(o, "poison_queue", json_string(poison));
        if (r == SQLQ_OK)
            json_object_set_new(o, "poison_approximate_count", json_integer(pp.approximate_count));
        else if (r == SQLQ_E_NOT_FOUND)
            json_object_set_new(o, "poison_approximate_count", json_null());
        else if (err.http_status == 401 || err.http_status == 403) {
            /* A SAS scoped to QUEUE: print what could be read; the result is partial (exit 1). */
            json_object_set_new(o, "poison_approximate_count", json_null());
            json_object_set_new(o, "poison_error",
                                json_string("not readable with this credential"));
            print_json(o);
            fprintf(stderr,
                    "sqlq queue stats: %s: not readable with this credential (HTTP %d %s); "
                    "the count of %s is shown, the result is partial (exit 1)\n",
                    poison, err.http_status, err.azure_code, q);
            return SQLQ_EXIT_FAILED;
        } else {
            json_decref(o);
            return fail(c, &err);
        }
    }
    print_json(o);
    return SQLQ_EXIT_OK;
}

/* The body from the argument, or all of stdin when there is none (or it is "-"). */
static char *read_body(const char *a, size_t *out_len)
{
    if (a && strcmp(a, "-") != 0) {
        *out_len = strlen(a);
        return strdup(a);
    }
    sqlq_buf b;
    sqlq_buf_init(&b, MAX_STDIN_BODY);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        if (sqlq_buf_add(&b, chunk, n) != SQLQ_OK)
            return NULL;
    return sqlq_buf_take(&b, out_len);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* put --count N: N copies with up to --in-flight requests at once; a JSON summary. */
static int put_copies(ctx *c, const sqlq_put_options *opt, const char *body, size_t len)
{
    size_t total = (size_t)c->s.count, done = 0, failed = 0, cancelled = 0;
    sqlq_put_item *items = calloc(total < PUT_CHUNK ? total : PUT_CHUNK, sizeof(*items));
    if (!items)
        return SQLQ_EXIT_FAILED;
    sqlq_error first;
    sqlq_error_clear(&first);
    double t0 = now_s();
    sqlq_result r = SQLQ_OK;
    /* A chunk whose failures were the service's (not one message's) is an outage: stop. */
    while (r == SQLQ_OK && done < total && failed == 0) {
        size_t n = total - done < PUT_CHUNK ? total - done : PUT_CHUNK;
        for (size_t i = 0; i < n; i++) {
            items[i].body = body;
            items[i].len = len;
        }
        r = sqlq_queue_put_many(c->q.client, arg(c, 0), items, n, (size_t)c->s.in_flight, opt);
        for (size_t i = 0; i < n; i++) {
            cancelled += items[i].result == SQLQ_E_CANCELLED;
            if (items[i].result != SQLQ_OK && items[i].result != SQLQ_E_CANCELLED) {
                failed++;
                if (first.code == SQLQ_OK)
                    first = items[i].error;
            }
        }
        done += n;
    }
    double secs = now_s() - t0;
    free(items);
    size_t put = done - failed - cancelled;
    json_t *o = json_object();
    json_object_set_new(o, "queue", json_string(arg(c, 0)));
    json_object_set_new(o, "put", json_integer((json_int_t)put));
    json_object_set_new(o, "failed", json_integer((json_int_t)failed));
    /* cancelled by a stop: up to in_flight of them may have been put all the same */
    json_object_set_new(o, "cancelled", json_integer((json_int_t)cancelled));
    json_object_set_new(o, "not_sent", json_integer((json_int_t)(total - done)));
    json_object_set_new(o, "in_flight", json_integer(c->s.in_flight));
    json_object_set_new(o, "seconds", json_real(secs));
    json_object_set_new(o, "per_second", json_real(secs > 0 ? (double)put / secs : 0));
    print_json(o);
    if (r == SQLQ_E_CANCELLED || (sqlq_stop_flag && put < total)) {
        fprintf(stderr, "sqlq queue put: interrupted: %zu put, up to %lld more may have been put "
                        "(in flight), the other %zu not\n",
                put, c->s.in_flight, total - put - failed);
        return SQLQ_EXIT_FAILED;
    }
    return failed || r != SQLQ_OK ? fail(c, &first) : SQLQ_EXIT_OK;
}

static int run_put(ctx *c)
{
    size_t len = 0;
    char *body = read_body(arg(c, 1), &len);
    if (!body) {
        fprintf(stderr, "sqlq queue put: cannot read the body from stdin (at most %zu bytes)\n",
                MAX_STDIN_BODY);
        return SQLQ_EXIT_USAGE;
    }
    sqlq_put_options opt = {(int)c->s.visibility_s, c->s.ttl_s, false};
    int code = SQLQ_EXIT_USAGE;
    if (c->s.count > 1) {
        code = put_copies(c, &opt, body, len);
    } else {
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_message m;
        if (sqlq_queue_put(c->q.client, arg(c, 0), body, len, &opt, &m, &err) != SQLQ_OK) {
            code = fail(c, &err);
        } else {
            print_message(c, &m, false);
            sqlq_message_free(&m);
            code = SQLQ_EXIT_OK;
        }
    }
    free(body);
    return code;
}

/* --limit, or --count for it; 0 (said why) when both are given and differ. */
static int receive_limit(const ctx *c)
{
    long long limit = c->s.limit, count = c->s.count;
    if (limit && count && limit != count) {
        fprintf(stderr, "sqlq queue %s: --count %lld and --limit %lld: --count is another spelling of "
                        "--limit; give one of them\n",
                c->name, count, limit);
        return 0;
    }
    return (int)(limit ? limit : count ? count : 1);
}

static int receive(ctx *c, bool peek)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_message_list l;
    int n = receive_limit(c);
    if (n == 0)
        return SQLQ_EXIT_USAGE;
    sqlq_result r = peek ? sqlq_queue_peek(c->q.client, arg(c, 0), n, &l, &err)
                         : sqlq_queue_get(c->q.client, arg(c, 0), n, (int)c->s.visibility_s, &l,
                                          &err);
    if (r != SQLQ_OK)
        return fail(c, &err);
    for (size_t i = 0; i < l.count; i++)
        print_message(c, &l.items[i], true);
    sqlq_message_list_free(&l);
    return SQLQ_EXIT_OK;
}

static int run_peek(ctx *c) { return receive(c, true); }
static int run_get(ctx *c) { return receive(c, false); }

static int run_delete_message(ctx *c)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_delete_message(c->q.client, arg(c, 0), arg(c, 1), arg(c, 2), &err) != SQLQ_OK)
        return fail(c, &err);
    printf("deleted message %s\n", arg(c, 1));
    return SQLQ_EXIT_OK;
}

static int run_update(ctx *c)
{
    size_t len = 0;
    char *body = NULL;
    if (arg(c, 3)) {
        body = read_body(arg(c, 3), &len);
        if (!body) {
            fprintf(stderr, "sqlq queue update: cannot read the body from stdin\n");
            return SQLQ_EXIT_USAGE;
        }
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    char *receipt = NULL;
    int64_t next = 0;
    sqlq_result r =
        sqlq_queue_update_message(c->q.client, arg(c, 0), arg(c, 1), arg(c, 2),
                                  (int)c->s.visibility_s, body, len, false, &receipt, &next, &err);
    free(body);
    if (r != SQLQ_OK)
        return fail(c, &err);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(arg(c, 1)));
    set_time(o, "time_next_visible", next);
    json_object_set_new(o, "pop_receipt", json_string(receipt));
    print_json(o);
    free(receipt);
    return SQLQ_EXIT_OK;
}

#define SPEC(name, usage, summary, table, lo, hi)                                                  \
    {name, usage, summary, table, sizeof(table) / sizeof(table[0]), lo, hi}

static const subcommand subcommands[] = {
    {SPEC("queue create", "sqlq queue create QUEUE [options]",
          "Create a queue; succeeds when it already exists.", common_table, 1, 1),
     run_create},
    {SPEC("queue delete", "sqlq queue delete QUEUE [options]",
          "Delete a queue and every message in it.", common_table, 1, 1),
     run_delete},
    {SPEC("queue list", "sqlq queue list [--prefix P] [options]",
          "Print the account's queue names, one a line.", list_table, 0, 0),
     run_list},
    {SPEC("queue stats", "sqlq queue stats QUEUE [options]",
          "Print the approximate message count of a queue and its poison queue. When the\n"
          "credential cannot read the poison queue (a SAS scoped to QUEUE), the main count is\n"
          "printed with \"poison_error\" and the exit code is 1 (a partial result).",
          common_table, 1, 1),
     run_stats},
    {SPEC("queue put", "sqlq queue put QUEUE [BODY|-] [--count N --in-flight K] [options]",
          "Put a message (BODY, or stdin when BODY is absent or -).\n"
          "The body is encoded per --encoding (base64 by default, as Azure Functions expects).\n"
          "With --count N, put N copies with K requests in flight and print a JSON summary.",
          put_table, 1, 2),
     run_put},
    {SPEC("queue peek", "sqlq queue peek QUEUE [--limit N] [--raw] [options]",
          "Show messages without hiding them (JSON lines, body decoded).", peek_table, 1, 1),
     run_peek},
    {SPEC("queue get", "sqlq queue get QUEUE [--limit N] [--visibility-s S] [--raw] [options]",
          "Receive messages, hiding them for --visibility-s.\n"
          "Prints JSON lines with id, dequeue_count, insertion_time, pop_receipt and the decoded\n"
          "body (--raw: the text as stored). Delete them with delete-message.",
          get_table, 1, 1),
     run_get},
    {SPEC("queue delete-message", "sqlq queue delete-message QUEUE ID POP_RECEIPT [options]",
          "Delete one received message.", common_table, 3, 3),
     run_delete_message},
    {SPEC("queue update", "sqlq queue update QUEUE ID POP_RECEIPT [BODY|-] [--visibility-s S]",
          "Change a received message's visibility and optionally its body.\n"
          "Prints the NEW pop receipt: every later update or delete must use it.",
          update_table, 3, 4),
     run_update},
    {SPEC("queue clear", "sqlq queue clear QUEUE [options]", "Delete every message in a queue.",
          common_table, 1, 1),
     run_clear},
};
#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

const sqlq_config_spec *sqlq_cmd_queue_spec(size_t i)
{
    return i < NSUB ? &subcommands[i].spec : NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sqlq queue SUBCOMMAND [options]   (sqlq queue SUBCOMMAND --help for each)\n\n"
               "subcommands:\n");
    for (size_t i = 0; i < NSUB; i++)
        fprintf(f, "  %-15s %.*s\n", subcommands[i].spec.command + 6,
                (int)strcspn(subcommands[i].spec.summary, "\n"), subcommands[i].spec.summary);
    fprintf(f, "\nThe connection comes from --queue-connection, $SQLQ_QUEUE_CONNECTION,\n"
               "$AzureWebJobsStorage, or a file named by $SQLQ_QUEUE_CONNECTION_FILE.\n"
               "exit codes: 0 ok, 1 the operation failed or the result is partial, 2 usage or\n"
               "configuration error (see docs/consumer.md)\n");
}

static int connect_and_run(const subcommand *sub, ctx *c)
{
    sqlq_common_settings_apply(&c->s.common);
    int code = sqlq_cli_queue_open(sub->spec.command, &c->s.common, SQLQ_CLI_OPERATOR, &c->q);
    if (code >= 0)
        return code;
    sqlq_error err;
    sqlq_error_clear(&err);
    const char *q = arg(c, 0);
    if (sub->spec.min_positional > 0 && !sqlq_queue_name_valid(q, &err)) {
        fprintf(stderr, "sqlq %s: %s\n", sub->spec.command, err.message);
        return SQLQ_EXIT_USAGE;
    }
    if (sub->spec.min_positional > 0 && sqlq_account_queue(c->q.account, q, &q, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq %s: %s\n", sub->spec.command, err.message);
        return SQLQ_EXIT_USAGE; /* a queue-scoped SAS URL for another queue */
    }
    return sub->run(c);
}

static const char *subcommand_name(const void *names, size_t i)
{
    (void)names;
    return subcommands[i].spec.command + strlen("queue ");
}

int sqlq_cmd_queue(int argc, char **argv)
{
    int code = SQLQ_EXIT_USAGE;
    int pick = sqlq_cli_pick("queue", argc, argv, subcommand_name, NULL, NSUB, usage, &code);
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
