#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "buf.h"
#include "log.h"
#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(sqlq_metrics *m)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_metrics_render(m, &b), SQLQ_OK);
    return sqlq_buf_take(&b, NULL);
}

static void quiet_sink(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)level;
    (void)fields;
    int *warnings = ctx;
    if (warnings && strncmp(event, "metrics_", 8) == 0)
        (*warnings)++;
}

static void test_metrics_render_exact(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);

    sqlq_label orders[] = {{"table", "orders"}, {"queue", "q"}};
    sqlq_label items[] = {{"table", "items"}, {"queue", "q"}};
    sqlq_counter *c1 = sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_PUBLISHED, NULL, orders, 2);
    sqlq_counter *c2 = sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_PUBLISHED, NULL, items, 2);
    assert_non_null(c1);
    assert_non_null(c2);
    assert_ptr_equal(sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_PUBLISHED, NULL, orders, 2), c1);
    sqlq_counter_add(c1, 41);
    sqlq_counter_inc(c1);
    sqlq_counter_inc(c2);

    sqlq_label q[] = {{"queue", "q"}};
    sqlq_gauge *g = sqlq_metrics_gauge(m, SQLQ_METRIC_POLL_BACKOFF_MS, NULL, q, 1);
    sqlq_gauge_set(g, 1500);
    sqlq_gauge *pending = sqlq_metrics_gauge(m, "app_ratio", "Help with \\ and\nnewline", NULL, 0);
    sqlq_gauge_set(pending, 0.25);
    sqlq_gauge_add(pending, -1);

    const double bounds[] = {0.005, 0.1, 1, 2.5};
    sqlq_histogram *h = sqlq_metrics_histogram(m, "app_seconds", "Latency.", bounds, 4, q, 1);
    sqlq_histogram_observe(h, 0.005); /* le is inclusive */
    sqlq_histogram_observe(h, 0.05);
    sqlq_histogram_observe(h, 0.5);
    sqlq_histogram_observe(h, 100);
    sqlq_counter *plain = sqlq_metrics_counter(m, "app_events_total", "", NULL, 0);
    sqlq_counter_add(plain, 7);

    char *text = render(m);
    const char *expected =
        "# HELP sqlq_changes_published_total Changes published to a queue, per source table and "
        "queue.\n"
        "# TYPE sqlq_changes_published_total counter\n"
        "sqlq_changes_published_total{table=\"orders\",queue=\"q\"} 42\n"
        "sqlq_changes_published_total{table=\"items\",queue=\"q\"} 1\n"
        "# HELP sqlq_poll_backoff_ms Current delay before the next poll in milliseconds, per "
        "queue.\n"
        "# TYPE sqlq_poll_backoff_ms gauge\n"
        "sqlq_poll_backoff_ms{queue=\"q\"} 1500\n"
        "# HELP app_ratio Help with \\\\ and\\nnewline\n"
        "# TYPE app_ratio gauge\n"
        "app_ratio -0.75\n"
        "# HELP app_seconds Latency.\n"
        "# TYPE app_seconds histogram\n"
        "app_seconds_bucket{queue=\"q\",le=\"0.005\"} 1\n"
        "app_seconds_bucket{queue=\"q\",le=\"0.1\"} 2\n"
        "app_seconds_bucket{queue=\"q\",le=\"1\"} 3\n"
        "app_seconds_bucket{queue=\"q\",le=\"2.5\"} 3\n"
        "app_seconds_bucket{queue=\"q\",le=\"+Inf\"} 4\n"
        "app_seconds_sum{queue=\"q\"} 100.555\n"
        "app_seconds_count{queue=\"q\"} 4\n"
        "# TYPE app_events_total counter\n"
        "app_events_total 7\n";
    assert_string_equal(text, expected);
    assert_int_equal(sqlq_histogram_count(h), 4);
    free(text);
    sqlq_metrics_destroy(m);
}

static void test_metrics_label_escaping(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_label l[] = {{"table", "dbo.\"Order\\s\"\nx"}, {"queue", "\xc3\xa9t\xc3\xa9"}};
    sqlq_counter_inc(sqlq_metrics_counter(m, "t_total", "h", l, 2));
    /* The same values find the same series; different ones make a new one. */
    sqlq_counter_inc(sqlq_metrics_counter(m, "t_total", "h", l, 2));
    sqlq_label empty[] = {{"table", ""}, {"queue", NULL}};
    sqlq_counter_inc(sqlq_metrics_counter(m, "t_total", "h", empty, 2));
    char *text = render(m);
    assert_string_equal(text, "# HELP t_total h\n"
                              "# TYPE t_total counter\n"
                              "t_total{table=\"dbo.\\\"Order\\\\s\\\"\\nx\",queue=\"\xc3\xa9t\xc3\xa9\"} 2\n"
                              "t_total{table=\"\",queue=\"\"} 1\n");
    free(text);
    sqlq_metrics_destroy(m);
}

static void test_metrics_builtin_buckets(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_label q[] = {{"queue", "q"}};
    sqlq_histogram *h = sqlq_metrics_histogram(m, SQLQ_METRIC_HANDLER_SECONDS, NULL, NULL, 0, q, 1);
    sqlq_histogram_observe(h, 45);
    char *text = render(m);
    assert_non_null(strstr(text, "# TYPE sqlq_handler_duration_seconds histogram\n"));
    assert_non_null(strstr(text, "sqlq_handler_duration_seconds_bucket{queue=\"q\",le=\"30\"} 0\n"));
    assert_non_null(strstr(text, "sqlq_handler_duration_seconds_bucket{queue=\"q\",le=\"60\"} 1\n"));
    assert_non_null(strstr(text, "sqlq_handler_duration_seconds_bucket{queue=\"q\",le=\"600\"} 1\n"));
    assert_non_null(strstr(text, "sqlq_handler_duration_seconds_sum{queue=\"q\"} 45\n"));
    free(text);
    sqlq_metrics_destroy(m);
}

static void test_metrics_null_registry_is_noop(void **state)
{
    (void)state;
    sqlq_label l[] = {{"queue", "q"}};
    sqlq_counter *c = sqlq_metrics_counter(NULL, SQLQ_METRIC_MESSAGES_CONSUMED, NULL, l, 1);
    sqlq_gauge *g = sqlq_metrics_gauge(NULL, SQLQ_METRIC_POLL_BACKOFF_MS, NULL, l, 1);
    sqlq_histogram *h = sqlq_metrics_histogram(NULL, SQLQ_METRIC_HANDLER_SECONDS, NULL, NULL, 0, l, 1);
    assert_null(c);
    assert_null(g);
    assert_null(h);
    sqlq_counter_inc(c);
    sqlq_counter_add(c, 5);
    sqlq_gauge_set(g, 3);
    sqlq_gauge_add(g, 3);
    sqlq_histogram_observe(h, 1);
    assert_int_equal(sqlq_counter_value(c), 0);
    assert_int_equal(sqlq_histogram_count(h), 0);
    char *text = render(NULL);
    assert_string_equal(text, "");
    free(text);
    sqlq_metrics_destroy(NULL);
}

static void test_metrics_rejects_clashes(void **state)
{
    (void)state;
    int warnings = 0;
    sqlq_log_set_sink(quiet_sink, &warnings);
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_label t[] = {{"table", "a"}};
    sqlq_label qn[] = {{"queue", "a"}};
    sqlq_label bad[] = {{"__x", "a"}};
    sqlq_label le[] = {{"le", "1"}};
    sqlq_label dash[] = {{"a-b", "1"}};
    assert_non_null(sqlq_metrics_counter(m, "x_total", "h", t, 1));
    assert_null(sqlq_metrics_gauge(m, "x_total", "h", t, 1));    /* other type */
    assert_null(sqlq_metrics_counter(m, "x_total", "h", qn, 1)); /* other label names */
    assert_null(sqlq_metrics_counter(m, "x_total", "h", NULL, 0));
    assert_null(sqlq_metrics_counter(m, "9bad", "h", NULL, 0));
    assert_null(sqlq_metrics_counter(m, "bad name", "h", NULL, 0));
    assert_null(sqlq_metrics_counter(m, NULL, "h", NULL, 0));
    assert_null(sqlq_metrics_counter(m, "y_total", "h", bad, 1));
    assert_null(sqlq_metrics_counter(m, "y_total", "h", dash, 1));
    assert_null(sqlq_metrics_histogram(m, "h_seconds", "h", NULL, 0, le, 1));
    const double unordered[] = {1, 0.5};
    assert_null(sqlq_metrics_histogram(m, "h2_seconds", "h", unordered, 2, NULL, 0));
    assert_non_null(sqlq_metrics_counter(m, "ns:colon_total", "h", NULL, 0));
    assert_true(warnings >= 9);
    char *text = render(m);
    assert_null(strstr(text, "y_total"));
    assert_null(strstr(text, "h2_seconds"));
    free(text);
    sqlq_metrics_destroy(m);
    sqlq_log_set_sink(NULL, NULL);
}

static void test_metrics_series_limit(void **state)
{
    (void)state;
    int warnings = 0;
    sqlq_log_set_sink(quiet_sink, &warnings);
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    char id[32];
    sqlq_label l[] = {{"id", id}};
    for (int i = 0; i < SQLQ_METRICS_MAX_SERIES; i++) {
        snprintf(id, sizeof(id), "%d", i);
        assert_non_null(sqlq_metrics_counter(m, "ids_total", "h", l, 1));
    }
    snprintf(id, sizeof(id), "one-more");
    assert_null(sqlq_metrics_counter(m, "ids_total", "h", l, 1));
    assert_null(sqlq_metrics_gauge(m, "other", "h", NULL, 0));
    snprintf(id, sizeof(id), "7");
    assert_non_null(sqlq_metrics_counter(m, "ids_total", "h", l, 1)); /* existing still found */
    assert_int_equal(warnings, 1);
    sqlq_metrics_destroy(m);
    sqlq_log_set_sink(NULL, NULL);
}

#define THREADS 8
#define ROUNDS 100000

typedef struct {
    sqlq_metrics *m;
    sqlq_counter *c;
    sqlq_gauge *g;
    sqlq_histogram *h;
} thread_arg;

static void *worker(void *p)
{
    thread_arg *a = p;
    sqlq_label l[] = {{"queue", "shared"}};
    for (int i = 0; i < ROUNDS; i++) {
        sqlq_counter_inc(a->c);
        sqlq_gauge_add(a->g, 1);
        sqlq_histogram_observe(a->h, (i % 2) ? 0.5 : 2);
        if (i % 1000 == 0) {
            /* Registration from many threads finds the one series. */
            if (sqlq_metrics_counter(a->m, "consumed_total", "h", l, 1) != a->c)
                return (void *)1;
            char *text = i % 10000 == 0 ? render(a->m) : NULL;
            free(text);
        }
    }
    return NULL;
}

static void test_metrics_counts_from_threads(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_label l[] = {{"queue", "shared"}};
    const double bounds[] = {1};
    thread_arg a = {m, sqlq_metrics_counter(m, "consumed_total", "h", l, 1),
                    sqlq_metrics_gauge(m, "inflight", "h", l, 1),
                    sqlq_metrics_histogram(m, "dur_seconds", "h", bounds, 1, l, 1)};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, &a), 0);
    for (int i = 0; i < THREADS; i++) {
        void *rv;
        assert_int_equal(pthread_join(t[i], &rv), 0);
        assert_null(rv);
    }
    assert_int_equal(sqlq_counter_value(a.c), (uint64_t)THREADS * ROUNDS);
    assert_true(sqlq_gauge_value(a.g) == (double)THREADS * ROUNDS);
    assert_int_equal(sqlq_histogram_count(a.h), (uint64_t)THREADS * ROUNDS);
    assert_true(sqlq_histogram_sum(a.h) == THREADS * (ROUNDS / 2) * 2.5);
    char *text = render(m);
    assert_non_null(strstr(text, "consumed_total{queue=\"shared\"} 800000\n"));
    assert_non_null(strstr(text, "dur_seconds_bucket{queue=\"shared\",le=\"1\"} 400000\n"));
    assert_non_null(strstr(text, "dur_seconds_count{queue=\"shared\"} 800000\n"));
    assert_non_null(strstr(text, "dur_seconds_sum{queue=\"shared\"} 1000000\n"));
    free(text);
    sqlq_metrics_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_render_exact),
        cmocka_unit_test(test_metrics_label_escaping),
        cmocka_unit_test(test_metrics_builtin_buckets),
        cmocka_unit_test(test_metrics_null_registry_is_noop),
        cmocka_unit_test(test_metrics_rejects_clashes),
        cmocka_unit_test(test_metrics_series_limit),
        cmocka_unit_test(test_metrics_counts_from_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
