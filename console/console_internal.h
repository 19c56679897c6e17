/* console_internal: what the console's files share: the server's state, one reply as it is
 * built, and the pages' and actions' entry points (console.c dispatches to them). */
#ifndef SQLQ_CONSOLE_INTERNAL_H
#define SQLQ_CONSOLE_INTERNAL_H

#include "console.h"

#include "clock.h"
#include "db.h"
#include "queue_client.h"
#include "status_report.h"

#include <jansson.h>
#include <pthread.h>

/* Request bodies (actions: a JSON object, the login form) are small. */
#define CONSOLE_BODY_MAX 65536
/* A per-process random secret as hex: the anti-CSRF token and the session cookie. */
#define CONSOLE_SECRET_HEX 64

struct sqlq_console {
    sqlq_console_config cfg; /* routes and strings copied below */
    sqlq_console_route *routes;
    char **owned; /* the routes' strings: table, queue, bridge of each */
    char *listen;
    char *token;
    char *db_conn;
    struct MHD_Daemon *daemon;
    uint16_t port;
    char host[256]; /* the listen host as a browser writes it in Host ("[::1]" for IPv6) */
    bool loopback;
    char csrf[CONSOLE_SECRET_HEX + 1];
    char session[CONSOLE_SECRET_HEX + 1];
    pthread_mutex_t db_lock; /* db and report: one request at a time */
    sqlq_db *db;
    sqlq_status_report *report;
    sqlq_clock clock;        /* the queue clients': sqlq_clock_system(cfg.stop) */
    char last_error[256];
};

/* One reply: status, content type, body (malloc'd, handed over), optional extra headers. */
typedef struct console_reply {
    unsigned status;
    const char *type;
    char *body;
    size_t len;
    const char *disposition; /* Content-Disposition (downloads) */
    const char *location;    /* redirects */
    char cookie[160];        /* Set-Cookie */
} console_reply;

/* The filters of a poison page (console.c reads them from the query string). */
typedef struct console_filter {
    const char *queue;    /* the routed queue (its poison queue is listed) */
    const char *contains; /* text the decoded body contains */
    const char *field;    /* FIELD=VALUE on the decoded JSON body, as poison requeue --where */
    const char *value;
} console_filter;

void console_reply_json(console_reply *r, unsigned status, json_t *doc);
void console_reply_error(console_reply *r, unsigned status, const char *fmt, ...)
    SQLQ_PRINTF(3, 4);
/* An error from a library as the page shows it: formatted, secrets redacted. */
json_t *console_error_json(const sqlq_error *err);

/* A queue client for one request (the operator tools' timeouts and retry budget). */
SQLQ_NODISCARD sqlq_result console_client(sqlq_console *c, sqlq_queue_client **out,
                                          sqlq_error *err);
/* Whether queue is one of the routes' queues (only those are served). */
bool console_routed(const sqlq_console *c, const char *queue);

/* console_pages.c: the JSON the pages read. */
void console_api_session(sqlq_console *c, console_reply *r);
void console_api_routes(sqlq_console *c, console_reply *r);
void console_api_queues(sqlq_console *c, console_reply *r);
void console_api_poison(sqlq_console *c, const console_filter *f, console_reply *r);
/* Prometheus text: sqlq_queue_approximate_messages{queue} of each routed queue and its poison
 * queue, sqlq_queue_credential_refused{queue} and sqlq_queue_unreachable{queue} of each routed
 * queue, read at each scrape. */
void console_api_metrics(sqlq_console *c, console_reply *r);

/* console_action.c: POST /api/poison/{requeue,purge,export} with a JSON body. */
void console_action(sqlq_console *c, const char *name, const char *body, size_t len,
                    console_reply *r);

#endif
