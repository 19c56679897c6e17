/* cmd_bridge: `sqlq bridge`: settings and routes from defaults, config file, environment and
 * flags, checked, then handed to the bridge daemon. */
#include "accounts.h"
#include "cli.h"
#include "cmd_bridge.h"

#include "bridge.h"
#include "capture_stop.h"
#include "commands.h"
#include "config.h"
#include "dialect.h"
#include "http_server.h"
#include "log.h"
#include "preflight.h"
#include "queue_client.h"
#include "route_filter.h"
#include "shard_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bridge_settings {
    char *db;
    char *table;
    char *queue;
    long long shards;
    char *shard_accounts;
    char *bridge_name;
    long long max_batch_size;
    long long polling_interval_ms;
    long long max_in_flight;
    long long lease_s;
    long long max_attempts;
    char *start_from;
    char *format;
    char *oversize;
    long long max_message_bytes;
    char *source;
    char *cursor_column;
    char *soft_delete_column;
    char *key_columns;
    long long safety_lag_ms;
    bool allow_retention_gap;
    long long message_ttl_s;
    char *columns;
    char *exclude_columns;
    char *ops;
    char *where;
    long long initial_visibility_s;
    bool changed;
    bool before_image;
    char *on_truncate;
    bool wakeup;
    long long shutdown_timeout_s;
    char *listen;
    bool once;
    long long once_outage_s;
    sqlq_common_settings common;
} bridge_settings;

#define S bridge_settings
static const sqlq_setting bridge_table[] = {
    SQLQ_SETTING_SECRET(S, db, "db", "SQLQ_DB_CONNECTION", NULL,
                        "ODBC connection string of the database (Driver=…;Database=…: the databases and "
                        "their drivers are in docs/dialects.md)"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "table to watch (schema.name); with --queue, one route (replaces the file's routes)"),
    SQLQ_SETTING_STR(S, queue, "queue", "SQLQ_QUEUE", NULL,
                     "queue the table's changes go to; a comma-separated list (each entry may be "
                     "account:queue) is a shard set: each key always goes to the same one "
                     "(docs/scaling.md)"),
    SQLQ_SETTING_INT(S, shards, "shards", "SQLQ_SHARDS", "0", 0, 256,
                     "2..256: the shard set QUEUE-0 … QUEUE-(N-1), each key to the one its hash "
                     "picks; 0 or 1: QUEUE as it is (docs/scaling.md)"),
    SQLQ_SETTING_STR(S, shard_accounts, "shard_accounts", "SQLQ_SHARD_ACCOUNTS", NULL,
                     "with shards: storage accounts (comma-separated names of the config file's "
                     "\"accounts\", or default) that shard i is in, in turn: shard i in entry i "
                     "mod the count"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", "default",
                     "name of the sync state and leases: instances with the same name share the work"),
    SQLQ_SETTING_INT(S, max_batch_size, "max_batch_size", "SQLQ_MAX_BATCH_SIZE", NULL, 1, 10000,
                     "changes leased per poll; unset: 100, or 1000 in batch format (a few full messages)"),
    SQLQ_SETTING_INT(S, polling_interval_ms, "polling_interval_ms", "SQLQ_POLLING_INTERVAL_MS", "1000", 10,
                     3600000, "pause after a poll that did not fill a batch"),
    SQLQ_SETTING_INT(S, max_in_flight, "max_in_flight", "SQLQ_MAX_IN_FLIGHT", "16", 1, 256,
                     "put requests on the wire at once"),
    SQLQ_SETTING_INT(S, lease_s, "lease_s", "SQLQ_LEASE_S", "60", 1, 86400,
                     "lease on changes being published; renewed every min(15 s, lease/3)"),
    SQLQ_SETTING_INT(S, max_attempts, "max_attempts", "SQLQ_MAX_ATTEMPTS", "5", 1, 1000,
                     "deliveries refused for good before a change goes to {queue}-poison"),
    SQLQ_SETTING_ENUM(S, start_from, "start_from", "SQLQ_START_FROM", "beginning", "beginning|now",
                      "first start: replay the captured history, or only changes from now on"),
    SQLQ_SETTING_ENUM(S, format, "format", "SQLQ_FORMAT", "row", "row|batch|functions",
                      "message shape: one change per message, packed {\"changes\":[…]}, or the Azure "
                      "Functions SQL trigger payload"),
    SQLQ_SETTING_ENUM(S, oversize, "oversize", "SQLQ_OVERSIZE", "truncate", "truncate|poison",
                      "a change too large for one message: send it without its before image, else the "
                      "key only; or send it to poison"),
    SQLQ_SETTING_INT(S, max_message_bytes, "max_message_bytes", "SQLQ_MAX_MESSAGE_BYTES", "65536", 1024,
                     1048576, "limit on a message as sent (after base64); the service allows 65536"),
    SQLQ_SETTING_ENUM(S, source, "source", "SQLQ_SOURCE", "auto",
                      "auto|change_log|change_tracking|cursor|logical",
                      "where changes come from: auto = the database's own source (the change log of "
                      "sqlq setup, or change tracking where the database keeps its own: "
                      "docs/dialects.md); cursor = read-only polling on --cursor-column; "
                      "logical = logical decoding of the write-ahead log (the slot of sqlq setup "
                      "--source logical; no triggers: docs/logical-source.md)"),
    SQLQ_SETTING_STR(S, cursor_column, "cursor_column", "SQLQ_CURSOR_COLUMN", NULL,
                     "source cursor: a monotonic NOT NULL column (integer, version or timestamp)"),
    SQLQ_SETTING_STR(S, soft_delete_column, "soft_delete_column", "SQLQ_SOFT_DELETE_COLUMN", NULL,
                     "source cursor: rows with this column set are published as deletes"),
    SQLQ_SETTING_STR(S, key_columns, "key_columns", "SQLQ_KEY_COLUMNS", NULL,
                     "the columns that identify a row (comma-separated) when they are not the "
                     "primary key: a unique index or constraint on exactly them, NOT NULL; unset: "
                     "the key sqlq setup gave the change log, else the primary key (not with change "
                     "tracking)"),
    SQLQ_SETTING_INT(S, safety_lag_ms, "safety_lag_ms", "SQLQ_SAFETY_LAG_MS", "-1", -1, 3600000,
                     "source cursor: how late a commit may be and still be read (ms); -1 = the "
                     "database's default: 10000, 0 where commits come one at a time, exact for a "
                     "rowversion column (docs/cursor-source.md)"),
    SQLQ_SETTING_BOOL(S, allow_retention_gap, "allow_retention_gap", "SQLQ_ALLOW_RETENTION_GAP", "false",
                      "change tracking: when it already cleaned up changes not yet delivered, "
                      "go on from the oldest kept (a warning; run sqlq backfill to re-send) instead "
                      "of stopping with an error"),
    SQLQ_SETTING_INT(S, message_ttl_s, "message_ttl_s", "SQLQ_MESSAGE_TTL_S", "-1", -1, 2147483647,
                     "time to live of published messages in seconds; -1 = never expire (a change "
                     "nobody consumed is never lost); 0 is not allowed"),
    SQLQ_SETTING_STR(S, columns, "columns", "SQLQ_COLUMNS", NULL,
                     "send only these columns of the row (comma-separated); the key columns always"),
    SQLQ_SETTING_STR(S, exclude_columns, "exclude_columns", "SQLQ_EXCLUDE_COLUMNS", NULL,
                     "send every column of the row but these (comma-separated); the key columns "
                     "always; not with --columns"),
    SQLQ_SETTING_STR(S, ops, "ops", "SQLQ_OPS", NULL,
                     "publish only these operations (comma-separated subset of insert,update,delete; "
                     "unset = all); the others are released unsent and counted in "
                     "sqlq_changes_filtered_total"),
    SQLQ_SETTING_STR(S, where, "where", "SQLQ_WHERE", NULL,
                     "publish only rows for which this SQL predicate on the current row (alias r) is "
                     "true, evaluated by the database in the poll; an update of a row that does not "
                     "match is published as a delete, an insert not at all (docs/messages.md); "
                     "change log and change tracking"),
    SQLQ_SETTING_INT(S, initial_visibility_s, "initial_visibility_s", "SQLQ_INITIAL_VISIBILITY_S", "0", 0,
                     604800, "published messages become visible to consumers this many seconds later"),
    SQLQ_SETTING_BOOL(S, changed, "changed", "SQLQ_CHANGED", "false",
                      "update messages carry \"changed\": the names of the columns changed since "
                      "this bridge last delivered the key (needs sqlq setup --track-columns; not "
                      "with --format functions)"),
    SQLQ_SETTING_BOOL(S, before_image, "before_image", "SQLQ_BEFORE_IMAGE", "false",
                      "update and delete messages carry \"before\": the row before the key's latest "
                      "change (needs sqlq setup --before-image; change log, not change tracking; not with "
                      "--format functions)"),
    SQLQ_SETTING_ENUM(S, on_truncate, "on_truncate", "SQLQ_ON_TRUNCATE", "stop", "stop|skip",
                      "source logical: a TRUNCATE of the table stops the route before it (consumers "
                      "still hold the rows: reset them, then pass it with skip), or is skipped with "
                      "a counted warning; the other sources do not see TRUNCATE"),
    SQLQ_SETTING_BOOL(S, wakeup, "wakeup", "SQLQ_WAKEUP", "true",
                      "poll at once when the table changed (the source's signal: the capture "
                      "trigger's notification, or the database's data version probed every 10 ms; "
                      "docs/capture.md, Wake-ups), not only every polling interval; --no-wakeup: "
                      "the interval alone"),
    SQLQ_SETTING_INT(S, shutdown_timeout_s, "shutdown_timeout_s", "SQLQ_SHUTDOWN_TIMEOUT_S", "30", 1, 3600,
                     "after SIGTERM: time to finish publishes in flight; exit 0 when they "
                     "settled in time, else leave anyway with exit 1 (what was left stays "
                     "leased and is published again after lease_s)"),
    SQLQ_SETTING_STR(S, listen, "listen", "SQLQ_LISTEN", NULL,
                     "serve /healthz, /readyz and /metrics on HOST:PORT (off when unset)"),
    SQLQ_SETTING_BOOL(S, once, "once", "SQLQ_ONCE", "false",
                      "publish what is pending, then exit (a number cursor column first waits out "
                      "its safety lag)"),
    SQLQ_SETTING_INT(S, once_outage_s, "once_outage_s", "SQLQ_ONCE_OUTAGE_S", "60", 1, 86400,
                     "with --once: exit 1 when the database or the queue service stays unavailable "
                     "(unreachable, throttling, credentials, permissions) this long"),
    SQLQ_COMMON_SETTINGS(S, common),
};
#undef S

static const sqlq_config_spec bridge_spec = {
    "bridge",
    "sqlq bridge --db CONN --table T --queue Q [options]   or   sqlq bridge --config FILE",
    "Publish every insert, update and delete of SQL tables to Azure Storage queues, at least once.\n"
    "Run `sqlq setup` first. Several instances with the same --bridge-name share the work.\n"
    "A config file may hold \"routes\": [{\"table\": …, \"queue\": …, other keys to override}];\n"
    "route keys override the top-level settings for that route.",
    bridge_table,
    sizeof(bridge_table) / sizeof(bridge_table[0]),
    0,
    0,
};

const sqlq_config_spec *sqlq_cmd_bridge_spec(void)
{
    return &bridge_spec;
}

/* Keys a route in the config file may set. */
static const char *const route_keys[] = {"table", "queue", "shards", "shard_accounts", "bridge_name", "max_batch_size",
                                         "polling_interval_ms", "max_in_flight", "lease_s",
                                         "max_attempts", "start_from", "format", "oversize",
                                         "max_message_bytes", "source", "cursor_column",
                                         "soft_delete_column", "key_columns", "safety_lag_ms", "message_ttl_s",
                                         "columns", "exclude_columns", "ops", "where",
                                         "initial_visibility_s", "wakeup", "changed",
                                         "before_image", "on_truncate"};

static const sqlq_setting *setting_of(const char *key)
{
    for (size_t i = 0; i < sizeof(route_keys) / sizeof(route_keys[0]); i++)
        if (strcmp(route_keys[i], key) == 0)
            for (size_t j = 0; j < bridge_spec.count; j++)
                if (strcmp(bridge_table[j].key, key) == 0)
                    return &bridge_table[j];
    return NULL;
}

/* One key of routes[i] into rs (strings point into the JSON, which outlives the run). */
static bool route_key(bridge_settings *rs, size_t i, const char *key, json_t *v)
{
    const sqlq_setting *s = setting_of(key);
    char *slot = (char *)rs + (s ? s->offset : 0);
    if (!s && strcmp(key, "track_columns") == 0) {
        /* sqlq setup's route key (one file drives both, like key_columns): what the change
         * log keeps; the bridge reads the log as it is and checks `changed` against it */
        if (json_is_boolean(v))
            return true;
        fprintf(stderr,
                "sqlq bridge: config file routes[%zu] key %s: not allowed (true or false)\n", i,
                key);
        return false;
    }
    if (!s) {
        fprintf(stderr, "sqlq bridge: config file routes[%zu]: unknown key '%s'\n", i, key);
        return false;
    }
    if (s->type == SQLQ_SET_INT) {
        long long n = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
        if (!json_is_integer(v) || n < s->min || n > s->max) {
            char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            fprintf(stderr, "sqlq bridge: config file routes[%zu] key %s: %s is not allowed (an integer %lld..%lld)\n",
                    i, key, text ? text : "?", s->min, s->max);
            free(text);
            return false;
        }
        memcpy(slot, &n, sizeof(n));
        return true;
    }
    if (s->type == SQLQ_SET_BOOL) {
        if (!json_is_boolean(v)) {
            char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            fprintf(stderr, "sqlq bridge: config file routes[%zu] key %s: %s is not allowed (true or false)\n",
                    i, key, text ? text : "?");
            free(text);
            return false;
        }
        bool b = json_is_true(v);
        memcpy(slot, &b, sizeof(b));
        return true;
    }
    const char *str = json_string_value(v);
    if (!str || (s->type == SQLQ_SET_ENUM && !sqlq_config_choice_ok(s->choices, str))) {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        fprintf(stderr, "sqlq bridge: config file routes[%zu] key %s: %s is not allowed (%s)\n", i, key,
                text ? text : "?", s->type == SQLQ_SET_ENUM ? s->choices : "a string");
        free(text);
        return false;
    }
    memcpy(slot, &str, sizeof(str));
    return true;
}

/* The route's columns, operations and visibility delay, checked now so a typo is a usage error. */
static bool route_filter(const bridge_settings *s, const char *where, sqlq_route_config *r)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_route_filter f;
    if (sqlq_route_filter_parse(s->columns, s->exclude_columns, s->ops, &f, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq bridge: %s %s\n", where, err.message);
        return false;
    }
    sqlq_route_filter_free(&f);
    r->columns = s->columns;
    r->exclude_columns = s->exclude_columns;
    r->ops = s->ops;
    r->where = s->where;
    if ((s->changed || s->before_image) && strcmp(s->format, "functions") == 0) {
        fprintf(stderr, "sqlq bridge: %s key %s: not allowed with format functions (the Azure "
                        "Functions SQL trigger payload has no place for it; use format row or "
                        "batch)\n", where, s->changed ? "changed" : "before_image");
        return false;
    }
    r->changed = s->changed;
    r->before_image = s->before_image;
    r->skip_truncate = strcmp(s->on_truncate, "skip") == 0;
    if (s->initial_visibility_s > 0 && s->message_ttl_s > 0 && s->initial_visibility_s >= s->message_ttl_s) {
        fprintf(stderr, "sqlq bridge: %s key initial_visibility_s: %lld is not allowed (less than "
                        "message_ttl_s %lld)\n", where, s->initial_visibility_s, s->message_ttl_s);
        return false;
    }
    r->initial_visibility_s = (int)s->initial_visibility_s;
    return true;
}

/* A shard set rather than one queue: a count, a list, or a queue in a named account. */
static bool sharded(const bridge_settings *s)
{
    return s->shards >= 2 || strchr(s->queue, ',') || strchr(s->queue, ':') ||
           (s->shard_accounts && *s->shard_accounts);
}

/* A route's shard set and what its config points into (kept until the run ends). */
typedef struct route_set {
    sqlq_shard_set set;
    const char **queues;
    const sqlq_account **accounts;
} route_set;

static void route_sets_free(route_set *sets, size_t n)
{
    for (size_t i = 0; sets && i < n; i++) {
        sqlq_shard_set_free(&sets[i].set);
        free(sets[i].queues);
        free(sets[i].accounts);
    }
    free(sets);
}

/* The names of shard_accounts ("a,b") into a NULL-terminated array of pointers into buf. */
static size_t split_names(char *buf, const char **names, size_t max)
{
    size_t n = 0;
    for (char *p = buf; p && *p && n < max;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        names[n++] = p;
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

/* The route's queue setting as a shard set, its accounts resolved; false (said why) when not. */
static bool route_shards(const bridge_settings *s, const char *where, const sqlq_cli_accounts *accts,
                         route_set *rs, sqlq_route_config *r)
{
    char names_buf[1024] = "";
    const char *names[SQLQ_SHARDS_MAX];
    if (s->shard_accounts && strlen(s->shard_accounts) >= sizeof(names_buf)) {
        fprintf(stderr, "sqlq bridge: %s key shard_accounts: too long (at most %zu characters)\n", where,
                sizeof(names_buf) - 1);
        return false;
    }
    snprintf(names_buf, sizeof(names_buf), "%s", s->shard_accounts ? s->shard_accounts : "");
    size_t nnames = split_names(names_buf, names, SQLQ_SHARDS_MAX);
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_shard_set_parse(s->queue, s->shards, names, nnames, &rs->set, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq bridge: %s key queue: '%s': %s\n", where, s->queue, err.message);
        return false;
    }
    size_t n = rs->set.count;
    rs->queues = calloc(n, sizeof(*rs->queues));
    rs->accounts = calloc(n, sizeof(*rs->accounts));
    if (!rs->queues || !rs->accounts)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *a = rs->set.accounts[i];
        rs->queues[i] = rs->set.queues[i];
        rs->accounts[i] = a && strcmp(a, "default") != 0 ? sqlq_cli_accounts_find(accts, a) : NULL;
        if (a && strcmp(a, "default") != 0 && !rs->accounts[i]) {
            fprintf(stderr, "sqlq bridge: %s: queue %s: account '%s' is not one of the config file's "
                            "\"accounts\" (or default)\n", where, rs->queues[i], a);
            return false;
        }
    }
    r->shard_queues = rs->queues;
    r->shard_accounts = rs->accounts;
    r->nshards = n;
    return true;
}

/* Settings → route; false (message printed) when a value is unusable. */
static bool make_route(const bridge_settings *s, const char *where, const sqlq_cli_accounts *accts,
                       route_set *set, sqlq_route_config *r)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_route_config_default(r);
    sqlq_table_name tn;
    if (!s->table || !*s->table || !s->queue || !*s->queue) {
        fprintf(stderr, "sqlq bridge: %s: %s is not set\n", where, !s->table || !*s->table ? "table" : "queue");
        return false;
    }
    if (sqlq_table_name_parse(s->table, &tn, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq bridge: %s key table: '%s': %s\n", where, s->table, err.message);
        return false;
    }
    char poison[64];
    if (sharded(s)) {
        /* checked by route_shards */
    } else if (!sqlq_queue_name_valid(s->queue, &err) || !sqlq_queue_poison_name(s->queue, poison, sizeof(poison))) {
        fprintf(stderr, "sqlq bridge: %s key queue: '%s' is not allowed (%s)\n", where, s->queue,
                err.message[0] ? err.message
                               : "the name must leave room for {queue}-poison: at most 56 characters, not ending in -poison");
        return false;
    }
    if (!s->bridge_name || !*s->bridge_name || strlen(s->bridge_name) > 128) {
        fprintf(stderr, "sqlq bridge: %s key bridge_name: '%s' is not allowed (1..128 characters)\n", where,
                s->bridge_name ? s->bridge_name : "");
        return false;
    }
    r->table = s->table;
    r->queue = s->queue;
    r->bridge_name = s->bridge_name;
    if (sharded(s) && !route_shards(s, where, accts, set, r))
        return false;
    (void)sqlq_envelope_format_parse(s->format, &r->format);
    r->max_batch_size = (int)s->max_batch_size;
    if (r->max_batch_size == 0) /* unset; batch format: a poll fills messages, not one change each */
        r->max_batch_size = r->format == SQLQ_FORMAT_BATCH ? 1000 : 100;
    r->polling_interval_ms = (int)s->polling_interval_ms;
    r->max_in_flight = (int)s->max_in_flight;
    r->lease_s = (int)s->lease_s;
    r->max_attempts = (int)s->max_attempts;
    r->start_from = strcmp(s->start_from, "now") == 0 ? SQLQ_START_NOW : SQLQ_START_BEGINNING;
    (void)sqlq_oversize_policy_parse(s->oversize, &r->oversize);
    r->max_message_bytes = (size_t)s->max_message_bytes;
    static const char *const sources[] = {"auto", "change_tracking", "change_log", "cursor",
                                          "logical"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s->source, sources[i]) == 0)
            r->source = (sqlq_source_kind)i;
    if (r->source == SQLQ_SOURCE_CURSOR && (!s->cursor_column || !*s->cursor_column)) {
        fprintf(stderr, "sqlq bridge: %s: source cursor needs cursor_column (--cursor-column)\n", where);
        return false;
    }
    r->cursor_column = s->cursor_column;
    r->soft_delete_column = s->soft_delete_column;
    r->key_columns = s->key_columns && *s->key_columns ? s->key_columns : NULL;
    r->safety_lag_ms = (int)s->safety_lag_ms;
    r->allow_retention_gap = s->allow_retention_gap;
    if (s->message_ttl_s == 0) {
        fprintf(stderr, "sqlq bridge: %s key message_ttl_s: 0 is not allowed (-1 = never expire, or "
                        "1..2147483647 seconds)\n", where);
        return false;
    }
    r->message_ttl_s = s->message_ttl_s;
    r->wakeup = s->wakeup;
    return route_filter(s, where, r);
}

/* The routes: the one of --table/--queue when given, else the file's "routes". */
static bool build_routes(const bridge_settings *s, json_t *file, const sqlq_cli_accounts *accts,
                         sqlq_route_config **out, route_set **sets_out, size_t *n)
{
    json_t *routes = file ? json_object_get(file, "routes") : NULL;
    bool single = (s->table && *s->table) || (s->queue && *s->queue) || !routes;
    if (single && routes)
        SQLQ_WARN("config_routes_ignored", "note=\"--table/--queue given: the config file's routes are not used\"");
    if (!single && (!json_is_array(routes) || json_array_size(routes) == 0)) {
        fprintf(stderr, "sqlq bridge: config file key routes: expected a non-empty array of {\"table\", \"queue\"}\n");
        return false;
    }
    size_t count = single ? 1 : json_array_size(routes);
    sqlq_route_config *r = calloc(count, sizeof(*r));
    route_set *sets = calloc(count, sizeof(*sets));
    *sets_out = sets;
    *n = count; /* the sets are freed with this count, whatever happens */
    if (!r || !sets) {
        free(r);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        bridge_settings rs = *s;
        char where[64];
        snprintf(where, sizeof(where), single ? "settings" : "config file routes[%zu]", i);
        json_t *obj = single ? NULL : json_array_get(routes, i);
        if (!single && !json_is_object(obj)) {
            fprintf(stderr, "sqlq bridge: %s: expected an object\n", where);
            free(r);
            return false;
        }
        const char *key;
        json_t *v;
        bool ok = true;
        if (obj)
            json_object_foreach(obj, key, v) ok = ok && route_key(&rs, i, key, v);
        if (!ok || !make_route(&rs, where, accts, &sets[i], &r[i])) {
            free(r);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(r[j].table, r[i].table) == 0 && strcmp(r[j].bridge_name, r[i].bridge_name) == 0) {
                fprintf(stderr, "sqlq bridge: %s: table '%s' appears twice with bridge_name '%s' (give each "
                                "route of one table its own bridge_name)\n", where, r[i].table, r[i].bridge_name);
                free(r);
                return false;
            }
    }
    *out = r;
    *n = count;
    return true;
}

/* A queue-scoped SAS URL reaches its own queue only: every route must go there, and its
 * poison queue is out of reach. A shard set's queues must each be reachable with their
 * account's credential. */
static bool routes_reachable(const sqlq_account *account, sqlq_route_config *routes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sqlq_error err;
        sqlq_error_clear(&err);
        for (size_t k = 0; k < routes[i].nshards; k++) {
            const sqlq_account *a = routes[i].shard_accounts[k] ? routes[i].shard_accounts[k] : account;
            if (!sqlq_account_reaches(a, routes[i].shard_queues[k], &err)) {
                fprintf(stderr, "sqlq bridge: route of table '%s': %s\n", routes[i].table, err.message);
                return false;
            }
        }
        if (routes[i].nshards == 0 &&
            sqlq_account_queue(account, routes[i].queue, &routes[i].queue, &err) != SQLQ_OK) {
            fprintf(stderr, "sqlq bridge: route of table '%s': %s\n", routes[i].table, err.message);
            return false;
        }
    }
    if (account->queue)
        SQLQ_WARN("poison_queue_unreachable",
                  "queue=%s note=\"the queue connection is a SAS URL scoped to this queue: "
                  "rows that cannot be published cannot go to the poison queue with it\"",
                  account->queue);
    return true;
}

static int run(const bridge_settings *s, const sqlq_account *account, const sqlq_route_config *routes,
               size_t n)
{
    sqlq_bridge_config bc;
    memset(&bc, 0, sizeof(bc));
    sqlq_bridge_health health;
    atomic_init(&health.routes, (int)n);
    atomic_init(&health.started, 0);
    atomic_init(&health.stopping, 0);
    atomic_init(&health.db_down, 0);
    atomic_init(&health.queue_down, 0);
    sqlq_answer_watch_init(&health.queue_answers);
    sqlq_metrics *metrics = NULL;
    sqlq_http_server *server = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (s->listen && *s->listen &&
        (sqlq_metrics_create(&metrics) != SQLQ_OK ||
         sqlq_http_server_start(s->listen, metrics, sqlq_bridge_ready, &health, &server, &err) != SQLQ_OK)) {
        fprintf(stderr, "sqlq bridge: --listen: '%s': %s\n", s->listen,
                err.message[0] ? err.message : "out of memory");
        sqlq_metrics_destroy(metrics);
        return SQLQ_EXIT_USAGE;
    }
    bc.metrics = metrics;
    bc.health = &health;
    bc.db_connection = s->db;
    bc.account = account;
    (void)sqlq_encoding_parse(s->common.encoding, &bc.encoding);
    bc.shutdown_timeout_s = (int)s->shutdown_timeout_s;
    bc.once = s->once;
    bc.once_outage_s = (int)s->once_outage_s;
    bc.stop = &sqlq_stop_flag;
    bc.routes = routes;
    bc.nroutes = n;
    sqlq_bridge_stats st;
    sqlq_result rc = sqlq_bridge_run(&bc, &st, &err);
    if (rc == SQLQ_E_TIMEOUT) { /* threads still use what run() allocated: leave without freeing */
        fprintf(stderr, "sqlq bridge: %s\n", err.message);
        fflush(NULL);
        _Exit(SQLQ_EXIT_FAILED);
    }
    sqlq_http_server_stop(server);
    sqlq_metrics_destroy(metrics);
    SQLQ_INFO("bridge_done", "changes=%llu messages=%llu released=%llu poisoned=%llu lost=%llu",
              st.changes, st.messages, st.released, st.poisoned, st.lost);
    if (rc != SQLQ_OK) {
        char msg[700];
        sqlq_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "sqlq bridge: %s\n", err.message[0] ? msg : sqlq_strerror(rc));
        /* a setting the database cannot serve (a route's changed / before_image without the
         * setup option, or not on this source; key_columns refused, as setup and backfill
         * refuse it): a configuration error */
        bool config = rc == SQLQ_E_UNSUPPORTED || strcmp(err.reason, SQLQ_STOP_KEY_REFUSED) == 0;
        return config ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED;
    }
    return SQLQ_EXIT_OK;
}

/* `sqlq bridge …` runs the daemon; `sqlq config check …` (check_only) takes the same settings
 * and only connects to both ends of every route. */
static int bridge_main(int argc, char **argv, bool check_only)
{
    bridge_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int code = sqlq_config_load_or_exit(&bridge_spec, &s, argc, argv, &res);
    if (code >= 0) {
        sqlq_config_free(&bridge_spec, &s, &res);
        return code;
    }
    sqlq_common_settings_apply(&s.common);
    sqlq_route_config *routes = NULL;
    route_set *sets = NULL;
    size_t n = 0;
    sqlq_cli_queue q;
    memset(&q, 0, sizeof(q));
    sqlq_cli_accounts accts;
    memset(&accts, 0, sizeof(accts));
    if (!s.db || !*s.db) {
        fprintf(stderr,
                "%s: db is not set (--db, SQLQ_DB_CONNECTION or SQLQ_DB_CONNECTION_FILE)\n",
                check_only ? "sqlq config check" : "sqlq bridge");
        code = SQLQ_EXIT_USAGE;
    } else {
        code = sqlq_cli_queue_open(check_only ? "config check" : "bridge", &s.common,
                                   SQLQ_CLI_ACCOUNT_ONLY, &q);
    }
    sqlq_account_options ao = {s.common.allow_insecure_http, s.common.ca_file};
    if (code < 0)
        code = sqlq_cli_accounts_load(check_only ? "config check" : "bridge", res.file, &ao, &accts);
    if (code < 0 && (!build_routes(&s, res.file, &accts, &routes, &sets, &n) ||
                     !routes_reachable(q.account, routes, n)))
        code = SQLQ_EXIT_USAGE;
    if (code < 0 && !check_only)
        code = run(&s, q.account, routes, n);
    if (code < 0) {
        int config_problems = 0;
        int problems =
            sqlq_preflight_run(s.db, q.account, q.encoding, routes, n, stdout, &config_problems);
        printf("%d problem%s found\n", problems, problems == 1 ? "" : "s");
        /* every problem a configuration error (as the bridge would stop with): exit 2 */
        code = !problems                     ? SQLQ_EXIT_OK
               : config_problems == problems ? SQLQ_EXIT_USAGE
                                             : SQLQ_EXIT_FAILED;
    }
    free(routes);
    route_sets_free(sets, n);
    sqlq_cli_accounts_free(&accts);
    sqlq_cli_queue_close(&q);
    sqlq_config_free(&bridge_spec, &s, &res);
    return code;
}

int sqlq_cmd_bridge(int argc, char **argv)
{
    return bridge_main(argc, argv, false);
}

int sqlq_cmd_bridge_check(int argc, char **argv)
{
    return bridge_main(argc, argv, true);
}
