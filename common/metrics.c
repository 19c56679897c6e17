#include "metrics.h"

#include "log.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM } metric_kind;

static const char *const kind_names[] = {"counter", "gauge", "histogram"};

struct sqlq_counter {
    _Atomic uint64_t n;
};

struct sqlq_gauge {
    _Atomic uint64_t bits; /* the double's bit pattern */
};

struct sqlq_histogram {
    const double *bounds; /* the family's bounds */
    size_t nbounds;
    _Atomic uint64_t sum_bits;
    _Atomic uint64_t *buckets; /* nbounds + 1 (the last is +Inf); not cumulative */
};

typedef struct series {
    struct series *next;
    char *labels; /* rendered `a="x",b="y"`, "" when there are none */
    struct sqlq_counter counter;
    struct sqlq_gauge gauge;
    struct sqlq_histogram hist;
} series;

typedef struct family {
    struct family *next;
    char *name;
    char *help;
    char *label_names; /* "table,queue": every series of a family has the same names */
    metric_kind kind;
    double *bounds;
    size_t nbounds;
    series *first, *last;
} family;

struct sqlq_metrics {
    pthread_mutex_t lock;
    family *first, *last;
    size_t nseries;
    bool warned_limit;
};

static const double publish_buckets[] = {SQLQ_METRICS_PUBLISH_BUCKETS};
static const double handler_buckets[] = {SQLQ_METRICS_HANDLER_BUCKETS};

static const struct builtin {
    const char *name;
    const char *help;
    const double *bounds;
    size_t nbounds;
} builtins[] = {
    {SQLQ_METRIC_CHANGES_PUBLISHED, "Changes published to a queue, per source table and queue.",
     NULL, 0},
    {SQLQ_METRIC_CHANGES_FILTERED,
     "Changes released without a message because the route does not publish them (--ops), per "
     "source table and queue.",
     NULL, 0},
    {SQLQ_METRIC_PUBLISH_SECONDS, "Time to publish one change (Put Message, retries included).",
     publish_buckets, sizeof(publish_buckets) / sizeof(publish_buckets[0])},
    {SQLQ_METRIC_PENDING_CHANGES, "Changes captured but not yet published, per table.", NULL, 0},
    {SQLQ_METRIC_LEASE_RENEWALS, "Renewals of the bridge's lease on a table.", NULL, 0},
    {SQLQ_METRIC_WAKEUPS,
     "Wake-ups received (the source's change signal: a capture trigger's notification, a data "
     "version that moved) that made the route poll before its interval, per table.",
     NULL, 0},
    {SQLQ_METRIC_RETRIES, "Operations retried after a transient failure, per reason.", NULL, 0},
    {SQLQ_METRIC_MESSAGES_CONSUMED, "Messages handled successfully and deleted, per queue.", NULL,
     0},
    {SQLQ_METRIC_MESSAGES_FAILED, "Handler failures, per queue.", NULL, 0},
    {SQLQ_METRIC_MESSAGES_POISONED, "Messages moved to the poison queue, per queue.", NULL, 0},
    {SQLQ_METRIC_VISIBILITY_RENEWALS, "Visibility renewals of messages being handled, per queue.",
     NULL, 0},
    {SQLQ_METRIC_POLL_BACKOFF_MS, "Current delay before the next poll in milliseconds, per queue.",
     NULL, 0},
    {SQLQ_METRIC_HANDLER_SECONDS, "Handler run time per message, per queue.", handler_buckets,
     sizeof(handler_buckets) / sizeof(handler_buckets[0])},
    {SQLQ_METRIC_HANDLER_UNAVAILABLE,
     "1 while the handler's target (the --sql database, the --http endpoint, what an --exec "
     "command reaches) is unavailable and messages are held, not counted toward poison; else 0.",
     NULL, 0},
    {SQLQ_METRIC_MESSAGES_HELD,
     "Messages held (kept invisible, retried with back-off) while the handler's target is "
     "unavailable, per queue.",
     NULL, 0},
};

static const struct builtin *builtin_of(const char *name)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

static uint64_t double_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

static double bits_double(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof(v));
    return v;
}

static void atomic_add_double(_Atomic uint64_t *bits, double delta)
{
    uint64_t old = atomic_load_explicit(bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(bits, &old, double_bits(bits_double(old) + delta),
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* ---- hot path ---------------------------------------------------------------------------- */

void sqlq_counter_add(sqlq_counter *c, uint64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&c->n, n, memory_order_relaxed);
}

void sqlq_counter_inc(sqlq_counter *c) { sqlq_counter_add(c, 1); }

uint64_t sqlq_counter_value(const sqlq_counter *c)
{
    return c ? atomic_load_explicit(&c->n, memory_order_relaxed) : 0;
}

void sqlq_gauge_set(sqlq_gauge *g, double v)
{
    if (g)
        atomic_store_explicit(&g->bits, double_bits(v), memory_order_relaxed);
}

void sqlq_gauge_add(sqlq_gauge *g, double delta)
{
    if (g)
        atomic_add_double(&g->bits, delta);
}

double sqlq_gauge_value(const sqlq_gauge *g)
{
    if (!g)
        return 0;
    return bits_double(atomic_load_explicit(&g->bits, memory_order_relaxed));
}

void sqlq_histogram_observe(sqlq_histogram *h, double v)
{
    if (!h || isnan(v))
        return;
    size_t i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_add_double(&h->sum_bits, v);
}

uint64_t sqlq_histogram_count(const sqlq_histogram *h)
{
    uint64_t n = 0;
    for (size_t i = 0; h && i <= h->nbounds; i++)
        n += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
    return n;
}

double sqlq_histogram_sum(const sqlq_histogram *h)
{
    if (!h)
        return 0;
    return bits_double(atomic_load_explicit(&h->sum_bits, memory_order_relaxed));
}

/* ---- registration ------------------------------------------------------------------------ */

sqlq_result sqlq_metrics_create(sqlq_metrics **out)
{
    *out = NULL;
    sqlq_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return SQLQ_E_NOMEM;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return SQLQ_E_NOMEM;
    }
    *out = m;
    return SQLQ_OK;
}

static void series_free(series *s)
{
    free(s->labels);
    free(s->hist.buckets);
    free(s);
}

static void family_free(family *f)
{
    for (series *s = f->first, *next; s; s = next) {
        next = s->next;
        series_free(s);
    }
    free(f->name);
    free(f->help);
    free(f->label_names);
    free(f->bounds);
    free(f);
}

void sqlq_metrics_destroy(sqlq_metrics *m)
{
    if (!m)
        return;
    for (family *f = m->first, *next; f; f = next) {
        next = f->next;
        family_free(f);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static bool valid_name(const char *s, bool colon_ok)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (colon_ok && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

/* Label value escaping of the text format: backslash, double quote and line feed. */
static sqlq_result add_escaped(sqlq_buf *b, const char *s, bool quote_too)
{
    sqlq_result r = SQLQ_OK;
    for (; *s && r == SQLQ_OK; s++) {
        if (*s == '\\')
            r = sqlq_buf_adds(b, "\\\\");
        else if (*s == '\n')
            r = sqlq_buf_adds(b, "\\n");
        else if (*s == '"' && quote_too)
            r = sqlq_buf_adds(b, "\\\"");
        else
            r = sqlq_buf_addc(b, *s);
    }
    return r;
}

/* Render labels into `rendered` and their names into `names`; false when a name is invalid. */
static bool render_labels(metric_kind kind, const sqlq_label *labels, size_t n, sqlq_buf *rendered,
                          sqlq_buf *names)
{
    sqlq_result r = sqlq_buf_adds(rendered, "");
    r = r == SQLQ_OK ? sqlq_buf_adds(names, "") : r;
    for (size_t i = 0; i < n && r == SQLQ_OK; i++) {
        const char *name = labels[i].name;
        if (!valid_name(name, false) || strncmp(name, "__", 2) == 0 ||
            (kind == KIND_HISTOGRAM && strcmp(name, "le") == 0)) {
            SQLQ_WARN("metrics_invalid_label", "label=\"%s\"", name ? name : "(null)");
            return false;
        }
        r = sqlq_buf_printf(rendered, "%s%s=\"", i ? "," : "", name);
        r = r == SQLQ_OK ? add_escaped(rendered, labels[i].value ? labels[i].value : "", true) : r;
        r = r == SQLQ_OK ? sqlq_buf_addc(rendered, '"') : r;
        r = r == SQLQ_OK ? sqlq_buf_printf(names, "%s%s", i ? "," : "", name) : r;
    }
    return r == SQLQ_OK;
}

static bool valid_bounds(const double *b, size_t n)
{
    if (n > SQLQ_METRICS_MAX_BUCKETS)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(b[i]) || (i > 0 && b[i] <= b[i - 1]))
            return false;
    return true;
}

static family *family_new(const char *name, const char *help, metric_kind kind,
                          const char *label_names, const double *bounds, size_t nbounds)
{
    const struct builtin *bi = builtin_of(name);
    if (!help)
        help = bi ? bi->help : "";
    if (kind == KIND_HISTOGRAM && !bounds && bi && bi->bounds) {
        bounds = bi->bounds;
        nbounds = bi->nbounds;
    } else if (kind == KIND_HISTOGRAM && !bounds) {
        bounds = publish_buckets;
        nbounds = sizeof(publish_buckets) / sizeof(publish_buckets[0]);
    }
    if (kind == KIND_HISTOGRAM && !valid_bounds(bounds, nbounds)) {
        SQLQ_WARN("metrics_invalid_buckets", "metric=%s", name);
        return NULL;
    }
    family *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->kind = kind;
    f->name = strdup(name);
    f->help = strdup(help);
    f->label_names = strdup(label_names);
    if (kind == KIND_HISTOGRAM) {
        f->bounds = calloc(nbounds ? nbounds : 1, sizeof(double));
        if (f->bounds)
            memcpy(f->bounds, bounds, nbounds * sizeof(double));
        f->nbounds = nbounds;
    }
    if (!f->name || !f->help || !f->label_names || (kind == KIND_HISTOGRAM && !f->bounds)) {
        family_free(f);
        return NULL;
    }
    return f;
}

static series *series_new(family *f, const char *labels)
{
    series *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->labels = strdup(labels);
    if (f->kind == KIND_HISTOGRAM) {
        s->hist.bounds = f->bounds;
        s->hist.nbounds = f->nbounds;
        s->hist.buckets = calloc(f->nbounds + 1, sizeof(*s->hist.buckets));
    }
    if (!s->labels || (f->kind == KIND_HISTOGRAM && !s->hist.buckets)) {
        series_free(s);
        return NULL;
    }
    return s;
}

/* Under the lock: the family called name, created when new; NULL on a clash or OOM. */
static family *family_get(sqlq_metrics *m, const char *name, const char *help, metric_kind kind,
                          const char *label_names, const double *bounds, size_t nbounds)
{
    for (family *f = m->first; f; f = f->next) {
        if (strcmp(f->name, name) != 0)
            continue;
        if (f->kind != kind || strcmp(f->label_names, label_names) != 0) {
            SQLQ_WARN("metrics_mismatch", "metric=%s type=%s labels=\"%s\" wanted_type=%s "
                      "wanted_labels=\"%s\"", name, kind_names[f->kind], f->label_names,
                      kind_names[kind], label_names);
            return NULL;
        }
        return f;
    }
    family *f = family_new(name, help, kind, label_names, bounds, nbounds);
    if (!f)
        return NULL;
    if (m->last)
        m->last->next = f;
    else
        m->first = f;
    m->last = f;
    return f;
}

static series *series_get(sqlq_metrics *m, family *f, const char *labels)
{
    for (series *s = f->first; s; s = s->next)
        if (strcmp(s->labels, labels) == 0)
            return s;
    if (m->nseries >= SQLQ_METRICS_MAX_SERIES) {
        if (!m->warned_limit)
            SQLQ_WARN("metrics_series_limit", "metric=%s limit=%d", f->name,
                      SQLQ_METRICS_MAX_SERIES);
        m->warned_limit = true;
        return NULL;
    }
    series *s = series_new(f, labels);
    if (!s)
        return NULL;
    if (f->last)
        f->last->next = s;
    else
        f->first = s;
    f->last = s;
    m->nseries++;
    return s;
}

static series *lookup(sqlq_metrics *m, metric_kind kind, const char *name, const char *help,
                      const double *bounds, size_t nbounds, const sqlq_label *labels,
                      size_t nlabels)
{
    if (!m)
        return NULL;
    if (!valid_name(name, true)) {
        SQLQ_WARN("metrics_invalid_name", "metric=\"%s\"", name ? name : "(null)");
        return NULL;
    }
    sqlq_buf rendered, names;
    sqlq_buf_init(&rendered, 64 * 1024);
    sqlq_buf_init(&names, 4096);
    series *s = NULL;
    if (render_labels(kind, labels, nlabels, &rendered, &names)) {
        pthread_mutex_lock(&m->lock);
        family *f = family_get(m, name, help, kind, sqlq_buf_str(&names), bounds, nbounds);
        s = f ? series_get(m, f, sqlq_buf_str(&rendered)) : NULL;
        pthread_mutex_unlock(&m->lock);
    }
    sqlq_buf_free(&rendered);
    sqlq_buf_free(&names);
    return s;
}

sqlq_counter *sqlq_metrics_counter(sqlq_metrics *m, const char *name, const char *help,
                                   const sqlq_label *labels, size_t nlabels)
{
    series *s = lookup(m, KIND_COUNTER, name, help, NULL, 0, labels, nlabels);
    return s ? &s->counter : NULL;
}

sqlq_gauge *sqlq_metrics_gauge(sqlq_metrics *m, const char *name, const char *help,
                               const sqlq_label *labels, size_t nlabels)
{
    series *s = lookup(m, KIND_GAUGE, name, help, NULL, 0, labels, nlabels);
    return s ? &s->gauge : NULL;
}

sqlq_histogram *sqlq_metrics_histogram(sqlq_metrics *m, const char *name, const char *help,
                                       const double *bounds, size_t nbounds,
                                       const sqlq_label *labels, size_t nlabels)
{
    series *s = lookup(m, KIND_HISTOGRAM, name, help, bounds, nbounds, labels, nlabels);
    return s ? &s->hist : NULL;
}

/* ---- rendering --------------------------------------------------------------------------- */

/* Shortest text that reads back as the same double; Prometheus spellings for the rest. */
static void format_double(double v, char *out, size_t size)
{
    if (isnan(v)) {
        snprintf(out, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (fabs(v) < 1e15 && v == (double)(long long)v) {
        snprintf(out, size, "%.0f", v); /* 1500, not 1.5e+03 */
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* `name{labels[,extra]} ` with the braces left out when there is nothing inside. */
static sqlq_result add_sample_name(sqlq_buf *b, const char *name, const char *suffix,
                                   const char *labels, const char *extra)
{
    bool has = *labels || extra;
    return sqlq_buf_printf(b, "%s%s%s%s%s%s%s ", name, suffix, has ? "{" : "", labels,
                           *labels && extra ? "," : "", extra ? extra : "", has ? "}" : "");
}

static sqlq_result render_histogram(sqlq_buf *b, const family *f, const series *s)
{
    char num[64], le[80];
    uint64_t cum = 0;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; i <= f->nbounds && r == SQLQ_OK; i++) {
        if (i < f->nbounds)
            format_double(f->bounds[i], num, sizeof(num));
        else
            snprintf(num, sizeof(num), "+Inf");
        snprintf(le, sizeof(le), "le=\"%s\"", num);
        cum += atomic_load_explicit(&s->hist.buckets[i], memory_order_relaxed);
        r = add_sample_name(b, f->name, "_bucket", s->labels, le);
        r = r == SQLQ_OK ? sqlq_buf_printf(b, "%" PRIu64 "\n", cum) : r;
    }
    format_double(sqlq_histogram_sum(&s->hist), num, sizeof(num));
    r = r == SQLQ_OK ? add_sample_name(b, f->name, "_sum", s->labels, NULL) : r;
    r = r == SQLQ_OK ? sqlq_buf_printf(b, "%s\n", num) : r;
    r = r == SQLQ_OK ? add_sample_name(b, f->name, "_count", s->labels, NULL) : r;
    /* _count is the +Inf bucket, so the two always agree in one scrape. */
    return r == SQLQ_OK ? sqlq_buf_printf(b, "%" PRIu64 "\n", cum) : r;
}

static sqlq_result render_family(sqlq_buf *b, const family *f)
{
    sqlq_result r = SQLQ_OK;
    if (*f->help) {
        r = sqlq_buf_printf(b, "# HELP %s ", f->name);
        r = r == SQLQ_OK ? add_escaped(b, f->help, false) : r;
        r = r == SQLQ_OK ? sqlq_buf_addc(b, '\n') : r;
    }
    r = r == SQLQ_OK ? sqlq_buf_printf(b, "# TYPE %s %s\n", f->name, kind_names[f->kind]) : r;
    for (const series *s = f->first; s && r == SQLQ_OK; s = s->next) {
        char num[64];
        switch (f->kind) {
        case KIND_COUNTER:
            r = add_sample_name(b, f->name, "", s->labels, NULL);
            r = r == SQLQ_OK ? sqlq_buf_printf(b, "%" PRIu64 "\n", sqlq_counter_value(&s->counter))
                             : r;
            break;
        case KIND_GAUGE:
            format_double(sqlq_gauge_value(&s->gauge), num, sizeof(num));
            r = add_sample_name(b, f->name, "", s->labels, NULL);
            r = r == SQLQ_OK ? sqlq_buf_printf(b, "%s\n", num) : r;
            break;
        case KIND_HISTOGRAM:
            r = render_histogram(b, f, s);
            break;
        }
    }
    return r;
}

sqlq_result sqlq_metrics_render(sqlq_metrics *m, sqlq_buf *out)
{
    if (!m)
        return SQLQ_OK;
    sqlq_result r = SQLQ_OK;
    pthread_mutex_lock(&m->lock);
    for (const family *f = m->first; f && r == SQLQ_OK; f = f->next)
        r = render_family(out, f);
    pthread_mutex_unlock(&m->lock);
    return r;
}
