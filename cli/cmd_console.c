/* cmd_console: `sqlq console`: the settings (the bridge's database, routes and queue
 * connection from the same file, plus where to listen, the token and read-only), then the
 * console (console/) until SIGTERM or Ctrl-C. */
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "console.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct console_settings {
    char *db;
    char *table;
    char *queue;
    char *bridge_name;
    char *console_listen;
    char *console_token;
    bool read_only;
    sqlq_common_settings common;
} console_settings;

#define S console_settings
static const sqlq_setting console_table[] = {
    SQLQ_SETTING_SECRET(S, db, "db", "SQLQ_DB_CONNECTION", NULL,
                        "ODBC connection string of the routes' database (the bridge's): the "
                        "Routes page reads sqlq status from it; unset: no route status"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "with --queue, one route (replaces the file's routes)"),
    SQLQ_SETTING_STR(S, queue, "queue", "SQLQ_QUEUE", NULL, "the route's queue"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", "default",
                     "the bridge name of routes that do not name one"),
    SQLQ_SETTING_STR(S, console_listen, "console_listen", "SQLQ_CONSOLE_LISTEN",
                     "127.0.0.1:8470",
                     "serve the console on HOST:PORT; an address that is not loopback needs "
                     "console_token"),
    SQLQ_SETTING_SECRET(S, console_token, "console_token", "SQLQ_CONSOLE_TOKEN", NULL,
                        "access token: asked for once by the login page (then a session "
                        "cookie), or sent as Authorization: Bearer; required on an address that "
                        "is not loopback"),
    SQLQ_SETTING_BOOL(S, read_only, "read_only", "SQLQ_CONSOLE_READ_ONLY", "false",
                      "show, never change: the actions (requeue, purge, export) are hidden and "
                      "refused"),
    SQLQ_COMMON_SETTINGS(S, common),
};
#undef S

static const sqlq_config_spec console_spec = {
    "console",
    "sqlq console [--config FILE] [--console-listen HOST:PORT] [--read-only] [options]",
    "Serve the operator console, a web application, from the same settings as sqlq bridge:\n"
    "Routes (per route: source, sync version, pending changes, age of the oldest, instances\n"
    "and their leases, and why delivery is held back, as sqlq status reads them, refreshed\n"
    "every 5 s), Queues (approximate counts of each routed queue and its -poison queue) and\n"
    "Poison (per routed queue: the first 32 messages of its -poison queue, filtered by text or\n"
    "a JSON field; requeue, export or purge a selection or all that match, as sqlq poison\n"
    "does: put first, then delete; a per-message report). Binds 127.0.0.1:8470 by default;\n"
    "any address that is not loopback needs console_token, or the console refuses to start.\n"
    "Actions are POSTs that must carry the page's anti-CSRF token and its own Origin.\n"
    "/metrics gives Prometheus the routed and poison queues' counts and whether the queue\n"
    "service refuses the credential (docker/monitoring/ has a dashboard and alert rules).\n"
    "Stops on SIGTERM or Ctrl-C. docs/console.md describes it.",
    console_table,
    sizeof(console_table) / sizeof(console_table[0]),
    0,
    0,
};

const sqlq_config_spec *sqlq_cmd_console_spec(void)
{
    return &console_spec;
}

/* The routes: --table/--queue when given, else the config file's "routes" (table, queue and
 * bridge_name of each; the bridge checks the rest of their keys). NULL after a message. */
static sqlq_console_route *build_routes(const console_settings *s, json_t *file, size_t *n)
{
    json_t *routes = file ? json_object_get(file, "routes") : NULL;
    bool single = (s->table && *s->table) || (s->queue && *s->queue);
    *n = single ? 1 : json_array_size(routes);
    if (*n == 0) {
        fprintf(stderr, "sqlq console: no routes: give --table and --queue, or a config file "
                        "with \"routes\": [{\"table\": …, \"queue\": …}]\n");
        return NULL;
    }
    sqlq_console_route *out = calloc(*n, sizeof(*out));
    for (size_t i = 0; out && i < *n; i++) {
        json_t *r = single ? NULL : json_array_get(routes, i);
        const char *bridge = json_string_value(json_object_get(r, "bridge_name"));
        out[i].table = single ? s->table : json_string_value(json_object_get(r, "table"));
        out[i].queue = single ? s->queue : json_string_value(json_object_get(r, "queue"));
        out[i].bridge = bridge ? bridge : s->bridge_name;
        sqlq_error err;
        sqlq_error_clear(&err);
        if (!out[i].table || !out[i].queue || !sqlq_queue_name_valid(out[i].queue, &err)) {
            fprintf(stderr, "sqlq console: route %zu: %s\n", i,
                    out[i].table && out[i].queue ? err.message : "needs table and queue");
            free(out);
            return NULL;
        }
    }
    return out;
}

static int serve(const console_settings *s, const sqlq_cli_queue *q,
                 const sqlq_console_route *routes, size_t n)
{
    sqlq_console_config cfg = {.listen = s->console_listen, .token = s->console_token,
                               .read_only = s->read_only, .db = s->db, .account = q->account,
                               .encoding = q->encoding, .routes = routes, .nroutes = n,
                               .stop = &sqlq_stop_flag};
    sqlq_console *console = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_console_start(&cfg, &console, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq console: %s\n", err.message);
        return err.code == SQLQ_E_INVALID ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED;
    }
    /* Scripts (and the tests) read the address from this line. */
    const char *colon = strrchr(s->console_listen, ':');
    printf("sqlq console: serving on http://%.*s:%u/%s\n",
           (int)(colon - s->console_listen), s->console_listen,
           (unsigned)sqlq_console_port(console), s->read_only ? " (read-only)" : "");
    fflush(stdout);
    while (!sqlq_stop_flag) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sqlq_console_stop(console);
    return SQLQ_EXIT_OK;
}

int sqlq_cmd_console(int argc, char **argv)
{
    console_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int code = sqlq_config_load_or_exit(&console_spec, &s, argc, argv, &res);
    sqlq_cli_queue q;
    memset(&q, 0, sizeof(q));
    sqlq_console_route *routes = NULL;
    size_t n = 0;
    if (code < 0) {
        sqlq_common_settings_apply(&s.common);
        routes = build_routes(&s, res.file, &n);
        code = routes ? -1 : SQLQ_EXIT_USAGE;
    }
    if (code < 0)
        code = sqlq_cli_queue_open("console", &s.common, SQLQ_CLI_ACCOUNT_ONLY, &q);
    if (code < 0)
        code = serve(&s, &q, routes, n);
    free(routes);
    sqlq_cli_queue_close(&q);
    sqlq_config_free(&console_spec, &s, &res);
    return code;
}
