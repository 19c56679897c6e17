/* bridge: the daemon that publishes every change of watched tables to queues, at least once:
 * one thread per route (table → queue) looping poll → publish → release → advance. */
#ifndef SQLQ_BRIDGE_H
#define SQLQ_BRIDGE_H

#include "account.h"
#include "capture.h"
#include "codec.h"
#include "envelope.h"
#include "metrics.h"
#include "result.h"
#include "stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_route_config {
    const char *table;       /* as the user wrote it */
    const char *queue;       /* target queue; poison goes to {queue}-poison; with a shard set the
                              * set's name in logs and route-wide metrics */
    /* A shard set (docs/scaling.md): nshards queues, each change to the one its key hashes to
     * (message/shard.h), each with {queue}-poison; 0: the one queue above. shard_accounts
     * (optional, nshards entries): shard i's storage account, NULL entries meaning the
     * bridge's; each must outlive the run. */
    const char *const *shard_queues;
    const sqlq_account *const *shard_accounts;
    size_t nshards;
    const char *bridge_name; /* namespace of sync state and leases ("default") */
    int max_batch_size;      /* 100 */
    int polling_interval_ms; /* 1000: pause after a batch that was not full */
    int max_in_flight;       /* 16 put requests on the wire at once */
    int lease_s;             /* 60 */
    int max_attempts;        /* 5: then the change goes to poison */
    sqlq_start_from start_from;
    sqlq_envelope_format format;
    sqlq_oversize_policy oversize;
    size_t max_message_bytes; /* limit on a message as sent: SQLQ_MESSAGE_MAX_TEXT */
    sqlq_source_kind source;  /* auto: change tracking on SQL Server, change log elsewhere */
    const char *cursor_column;      /* source cursor: the monotonic column */
    const char *soft_delete_column; /* source cursor: rows with it set publish as deletes */
    const char *key_columns; /* NULL: the change log's key or the primary key; else a unique
                              * index's columns ("a,b": sql/schema/table_key.h) */
    int safety_lag_ms;              /* source cursor: read only rows older than this (timestamps) */
    bool allow_retention_gap; /* SQL Server: go on (with a warning) when retention overran */
    long long message_ttl_s;  /* -1: messages never expire (default); else seconds */
    const char *columns;         /* NULL: every column; else only these (and the key) */
    const char *exclude_columns; /* NULL: none; else every column but these (the key stays) */
    const char *ops;             /* NULL: insert,update,delete; else the ones published */
    const char *where;           /* NULL: every row; else a predicate on the current row
                                  * (route_filter.h: what an unmatched change becomes) */
    int initial_visibility_s;    /* 0: messages visible at once; else this many seconds later */
    bool changed;      /* updates carry "changed" (sqlq setup --track-columns) */
    bool before_image; /* updates and deletes carry "before" (sqlq setup --before-image) */
    bool skip_truncate; /* logical source: a TRUNCATE is skipped (warned) instead of stopping */
    bool wakeup; /* true: poll at once on a hint of a change (bridge/wakeup.h), not only each interval */
} sqlq_route_config;

void sqlq_route_config_default(sqlq_route_config *r);

typedef struct sqlq_bridge_config {
    const char *db_connection;    /* ODBC connection string */
    const sqlq_account *account;  /* queue service; must outlive the run */
    sqlq_encoding encoding;       /* base64 (what Azure Functions expects) */
    const char *instance_id;      /* NULL: hostname:pid:random */
    int shutdown_timeout_s;       /* 30: after a stop request, give up waiting after this */
    int renew_interval_ms;        /* 0: min(15 s, lease / 3) */
    bool once;                    /* drain what is pending, then return */
    int once_outage_s;            /* with once: give up (SQLQ_E_TIMEOUT) when the database or the
                                     queue service stays unavailable this long; 0 = 60 */
    const sqlq_stop *stop; /* set by the signal handler: stop polling, finish, exit */
    sqlq_metrics *metrics;        /* optional: sqlq_changes_published_total and friends */
    struct sqlq_bridge_health *health; /* optional: kept up to date for /readyz */
    const sqlq_route_config *routes;
    size_t nroutes;
} sqlq_bridge_config;

/* What /readyz reports: ready once every route has started (connected to the database,
 * capture open) and the queue service answered, while every route's database and queue
 * service answer (an outage: unreachable, throttling, credentials, permissions; an idle route
 * probes the queue every few seconds), and until a stop request. Owned by the caller, updated by the
 * bridge from its threads, read by the HTTP server's thread. */
typedef struct sqlq_bridge_health {
    atomic_int routes;   /* routes configured */
    atomic_int started;  /* routes past their start */
    atomic_int stopping; /* a stop was requested */
    atomic_int db_down;    /* routes whose last database call failed */
    atomic_int queue_down; /* routes whose last contact with the queue service failed */
} sqlq_bridge_health;

/* A sqlq_readiness_fn (http_server.h) over a sqlq_bridge_health. */
bool sqlq_bridge_ready(void *health, char *reason, size_t reason_size);

/* Counters of one run, summed over routes. */
typedef struct sqlq_bridge_stats {
    unsigned long long changes;   /* changes polled */
    unsigned long long messages;  /* messages accepted by the main queues */
    unsigned long long released;  /* changes released after acceptance */
    unsigned long long poisoned;  /* changes sent to poison queues */
    unsigned long long lost;      /* releases refused: the lease had passed to another instance */
    unsigned long long transient; /* publish rounds that failed transiently and were retried */
} sqlq_bridge_stats;

/* "host:pid:8-hex-random" into out. */
void sqlq_bridge_instance_id(char *out, size_t out_size);

/* Run every route until *stop is set (or, with once, until each has drained), then finish the
 * publishes in flight, release what was accepted and return. SQLQ_OK on a clean stop;
 * otherwise the first route's failure (a permanent error such as a table not set up) or
 * SQLQ_E_TIMEOUT when the routes did not finish within shutdown_timeout_s. */
SQLQ_NODISCARD sqlq_result sqlq_bridge_run(const sqlq_bridge_config *cfg, sqlq_bridge_stats *out_stats,
                                           sqlq_error *err);

#endif
