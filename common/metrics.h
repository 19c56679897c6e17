/* metrics: a thread-safe registry of counters, gauges and histograms with labels, rendered in
 * the Prometheus text exposition format 0.0.4. */
#ifndef SQLQ_METRICS_H
#define SQLQ_METRICS_H

#include "buf.h"
#include "result.h"

#include <stddef.h>
#include <stdint.h>

/* There is no global registry: a daemon creates one and passes it down. Every function
 * accepts NULL for the registry ("no metrics": lookups return NULL) and for a series handle
 * (updates do nothing), so libraries can be embedded without metrics at the cost of one
 * pointer test per update.
 *
 * A series (one family name + one set of label values) is looked up or created once, under
 * the registry's mutex, and its handle is then kept: handles stay valid until the registry
 * is destroyed. Updates on a handle are lock-free atomics (relaxed order): cheap enough for
 * every message on the hot path. Rendering takes the mutex; it reads counts that other
 * threads may be changing, so a histogram's _sum may lag its buckets by an observation. */
typedef struct sqlq_metrics sqlq_metrics;
typedef struct sqlq_counter sqlq_counter;
typedef struct sqlq_gauge sqlq_gauge;
typedef struct sqlq_histogram sqlq_histogram;

typedef struct sqlq_label {
    const char *name;  /* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" */
    const char *value; /* any UTF-8 text; escaped when rendered */
} sqlq_label;

/* Metric names the sqlq daemons use (the labels each takes in braces). Pass help = NULL to
 * the lookup functions to use the built-in help text of these names, and bounds = NULL for
 * their built-in buckets. */
/* bridge */
#define SQLQ_METRIC_CHANGES_PUBLISHED "sqlq_changes_published_total" /* counter {table,queue} */
#define SQLQ_METRIC_CHANGES_FILTERED "sqlq_changes_filtered_total"   /* counter {table,queue} */
#define SQLQ_METRIC_PUBLISH_SECONDS "sqlq_publish_duration_seconds"  /* histogram {queue} */
#define SQLQ_METRIC_PENDING_CHANGES "sqlq_pending_changes"           /* gauge {table} */
#define SQLQ_METRIC_ROUTE_STOPPED "sqlq_route_stopped"               /* gauge {table,reason} */
#define SQLQ_METRIC_LEASE_RENEWALS "sqlq_lease_renewals_total"       /* counter {table} */
#define SQLQ_METRIC_WAKEUPS "sqlq_wakeups_total"                     /* counter {table} */
/* shared: reason is a short token such as throttled, server_error, network, deadlock, timeout */
#define SQLQ_METRIC_RETRIES "sqlq_retries_total" /* counter {reason} */
/* consumer */
#define SQLQ_METRIC_MESSAGES_CONSUMED "sqlq_messages_consumed_total" /* counter {queue} */
#define SQLQ_METRIC_MESSAGES_FAILED "sqlq_messages_failed_total"     /* counter {queue} */
#define SQLQ_METRIC_MESSAGES_POISONED "sqlq_messages_poisoned_total" /* counter {queue} */
#define SQLQ_METRIC_VISIBILITY_RENEWALS "sqlq_visibility_renewals_total" /* counter {queue} */
#define SQLQ_METRIC_POLL_BACKOFF_MS "sqlq_poll_backoff_ms"           /* gauge {queue} */
#define SQLQ_METRIC_HANDLER_SECONDS "sqlq_handler_duration_seconds"  /* histogram {queue} */
#define SQLQ_METRIC_HANDLER_UNAVAILABLE "sqlq_handler_unavailable"   /* gauge {queue}: 1 or 0 */
#define SQLQ_METRIC_MESSAGES_HELD "sqlq_messages_held"               /* gauge {queue} */

/* Upper bounds (seconds) of the built-in buckets; +Inf is always added. */
#define SQLQ_METRICS_PUBLISH_BUCKETS                                                               \
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
#define SQLQ_METRICS_HANDLER_BUCKETS                                                               \
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600

#define SQLQ_METRICS_MAX_BUCKETS 32
/* Series per registry: a label taking unbounded values (a message id) would otherwise grow
 * memory without end. Lookups past the limit return NULL and log one warning. */
#define SQLQ_METRICS_MAX_SERIES 10000

SQLQ_NODISCARD sqlq_result sqlq_metrics_create(sqlq_metrics **out);
void sqlq_metrics_destroy(sqlq_metrics *m);

/* Find or create a series. The first lookup of a name fixes its type, help text and (for
 * histograms) its bucket bounds; later lookups of the same name must use the same type and
 * label names (in the same order), otherwise they return NULL and log a warning. NULL is also
 * returned for m == NULL, an invalid name, or when memory or SQLQ_METRICS_MAX_SERIES runs out.
 * bounds must be strictly increasing and finite (at most SQLQ_METRICS_MAX_BUCKETS). */
sqlq_counter *sqlq_metrics_counter(sqlq_metrics *m, const char *name, const char *help,
                                   const sqlq_label *labels, size_t nlabels);
sqlq_gauge *sqlq_metrics_gauge(sqlq_metrics *m, const char *name, const char *help,
                               const sqlq_label *labels, size_t nlabels);
sqlq_histogram *sqlq_metrics_histogram(sqlq_metrics *m, const char *name, const char *help,
                                       const double *bounds, size_t nbounds,
                                       const sqlq_label *labels, size_t nlabels);

/* Hot path: each is a NULL test and one or two atomic operations. */
void sqlq_counter_add(sqlq_counter *c, uint64_t n);
void sqlq_counter_inc(sqlq_counter *c);
uint64_t sqlq_counter_value(const sqlq_counter *c); /* 0 for NULL */

void sqlq_gauge_set(sqlq_gauge *g, double v);
void sqlq_gauge_add(sqlq_gauge *g, double delta); /* negative to decrease */
double sqlq_gauge_value(const sqlq_gauge *g);     /* 0 for NULL */

void sqlq_histogram_observe(sqlq_histogram *h, double v);
uint64_t sqlq_histogram_count(const sqlq_histogram *h); /* 0 for NULL */
double sqlq_histogram_sum(const sqlq_histogram *h);

/* Append the text exposition of every family (in first-registration order, series in
 * creation order) to out. A NULL registry renders nothing. */
SQLQ_NODISCARD sqlq_result sqlq_metrics_render(sqlq_metrics *m, sqlq_buf *out);

#endif
