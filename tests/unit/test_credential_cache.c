/* credential_cache: the token cache's timing on a fake clock (refresh when less than
 * min(5 min, half the lifetime) remains; a failed refresh keeps the valid token and waits
 * SQLQ_TOKEN_RETRY_S), refusal, errors that name the source and never the token, and one token
 * request at a time from many threads. */
#include "credential_token.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fake_source {
    int64_t now;          /* the fake wall clock, epoch seconds */
    int64_t lifetime;     /* of each token minted */
    bool fail;            /* the next requests fail (transient, like a 500) */
    atomic_int fetches;
    atomic_int in_flight; /* requests running at once */
    atomic_int most_in_flight;
    int delay_ms;         /* each request takes this long (threads test) */
} fake_source;

static int64_t fake_now(void *ctx)
{
    return ((fake_source *)ctx)->now;
}

static sqlq_result fake_fetch(void *ctx, char **token, int64_t *expires_on, sqlq_error *err)
{
    fake_source *f = ctx;
    int n = atomic_fetch_add(&f->in_flight, 1) + 1;
    if (n > atomic_load(&f->most_in_flight))
        atomic_store(&f->most_in_flight, n);
    if (f->delay_ms) {
        struct timespec ts = {0, (long)f->delay_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    int k = atomic_fetch_add(&f->fetches, 1) + 1;
    atomic_fetch_sub(&f->in_flight, 1);
    if (f->fail)
        return sqlq_error_set(err, SQLQ_E_HTTP, true, "fake source (TEST): 500 down");
    char text[64];
    snprintf(text, sizeof(text), "eyJ0b2tlbi%d", k);
    *token = strdup(text);
    *expires_on = f->now + f->lifetime;
    return SQLQ_OK;
}

static sqlq_token_cache *cache_for(fake_source *f)
{
    sqlq_token_cache_options o = {fake_fetch, f, NULL, fake_now, f, "fake source (TEST)"};
    sqlq_token_cache *c = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_token_cache_create(&o, &c, &err), SQLQ_OK);
    return c;
}

/* Gets a token; returns its text (static, one per thread: getter threads call it at once) and
 * stores the generation. */
static const char *get(sqlq_token_cache *c, uint64_t *gen, sqlq_result want)
{
    static _Thread_local char text[64];
    sqlq_buf b;
    sqlq_buf_init(&b, 4096);
    sqlq_error err;
    sqlq_error_clear(&err);
    uint64_t g = 0;
    assert_int_equal(sqlq_token_cache_get(c, &b, &g, &err), want);
    snprintf(text, sizeof(text), "%s", want == SQLQ_OK ? sqlq_buf_str(&b) : err.message);
    sqlq_buf_free(&b);
    if (gen)
        *gen = g;
    return text;
}

static void test_credential_cache_refresh_rule(void **state)
{
    (void)state;
    assert_int_equal(sqlq_token_refresh_time(0, 3600), 3300); /* an hour: 5 min before */
    assert_int_equal(sqlq_token_refresh_time(0, 600), 300);   /* 10 min: half = 5 min */
    assert_int_equal(sqlq_token_refresh_time(0, 90), 45);     /* 90 s: half way */
    assert_int_equal(sqlq_token_refresh_time(1000, 1020), 1010);
    assert_int_equal(sqlq_token_refresh_time(1000, 1000), 1000); /* no lifetime: at once */
}

static void test_credential_cache_cached_until_refresh_time(void **state)
{
    (void)state;
    fake_source f = {.now = 1000, .lifetime = 3600};
    sqlq_token_cache *c = cache_for(&f);
    uint64_t g1, g2;
    assert_string_equal(get(c, &g1, SQLQ_OK), "eyJ0b2tlbi1");
    assert_int_equal(sqlq_token_cache_refresh_at(c), 1000 + 3300);
    f.now = 1000 + 3299;
    assert_string_equal(get(c, &g2, SQLQ_OK), "eyJ0b2tlbi1");
    assert_int_equal(g1, g2);
    assert_int_equal(atomic_load(&f.fetches), 1);
    f.now = 1000 + 3300; /* 5 minutes left: refreshed */
    assert_string_equal(get(c, &g2, SQLQ_OK), "eyJ0b2tlbi2");
    assert_true(g2 > g1);
    assert_int_equal(atomic_load(&f.fetches), 2);
    assert_int_equal(sqlq_token_cache_fetches(c), 2);
    sqlq_token_cache_destroy(c);
}

static void test_credential_cache_short_token_refreshed_half_way(void **state)
{
    (void)state;
    fake_source f = {.now = 0, .lifetime = 90};
    sqlq_token_cache *c = cache_for(&f);
    get(c, NULL, SQLQ_OK);
    f.now = 44;
    get(c, NULL, SQLQ_OK);
    assert_int_equal(atomic_load(&f.fetches), 1);
    f.now = 45;
    assert_string_equal(get(c, NULL, SQLQ_OK), "eyJ0b2tlbi2");
    assert_int_equal(sqlq_token_cache_refresh_at(c), 45 + 45);
    sqlq_token_cache_destroy(c);
}

static void test_credential_cache_failed_refresh_keeps_valid_token(void **state)
{
    (void)state;
    fake_source f = {.now = 0, .lifetime = 600};
    sqlq_token_cache *c = cache_for(&f);
    uint64_t g1, g2;
    get(c, &g1, SQLQ_OK);
    f.now = 300;
    f.fail = true;
    assert_string_equal(get(c, &g2, SQLQ_OK), "eyJ0b2tlbi1"); /* still valid: used */
    assert_int_equal(g1, g2);
    assert_int_equal(atomic_load(&f.fetches), 2);
    f.now = 300 + SQLQ_TOKEN_RETRY_S - 1; /* no new request before the retry time */
    get(c, NULL, SQLQ_OK);
    assert_int_equal(atomic_load(&f.fetches), 2);
    f.now = 300 + SQLQ_TOKEN_RETRY_S;
    f.fail = false;
    assert_string_equal(get(c, NULL, SQLQ_OK), "eyJ0b2tlbi3");
    sqlq_token_cache_destroy(c);
}

static void test_credential_cache_expired_and_failing_is_an_outage(void **state)
{
    (void)state;
    fake_source f = {.now = 0, .lifetime = 60};
    sqlq_token_cache *c = cache_for(&f);
    get(c, NULL, SQLQ_OK);
    f.now = 60;
    f.fail = true;
    sqlq_buf b;
    sqlq_buf_init(&b, 4096);
    sqlq_error err;
    sqlq_error_clear(&err);
    uint64_t g;
    assert_int_equal(sqlq_token_cache_get(c, &b, &g, &err), SQLQ_E_NETWORK);
    assert_true(err.transient);
    assert_string_equal(err.azure_code, "TokenUnavailable");
    assert_non_null(strstr(err.message, "fake source (TEST): 500 down"));
    assert_null(strstr(err.message, "eyJ"));
    /* Within the retry time callers get the same reason without a new request. */
    sqlq_error_clear(&err);
    f.now = 61;
    assert_int_equal(sqlq_token_cache_get(c, &b, &g, &err), SQLQ_E_NETWORK);
    assert_non_null(strstr(err.message, "fake source (TEST): 500 down"));
    assert_int_equal(atomic_load(&f.fetches), 2);
    sqlq_buf_free(&b);
    sqlq_token_cache_destroy(c);
}

static void test_credential_cache_refused_token_dropped_once(void **state)
{
    (void)state;
    fake_source f = {.now = 0, .lifetime = 3600};
    sqlq_token_cache *c = cache_for(&f);
    uint64_t g1, g2, g3;
    get(c, &g1, SQLQ_OK);
    sqlq_token_cache_invalidate(c, g1);
    assert_string_equal(get(c, &g2, SQLQ_OK), "eyJ0b2tlbi2");
    sqlq_token_cache_invalidate(c, g1); /* another client's late refusal of the old token */
    assert_string_equal(get(c, &g3, SQLQ_OK), "eyJ0b2tlbi2");
    assert_int_equal(g2, g3);
    assert_int_equal(atomic_load(&f.fetches), 2);
    sqlq_token_cache_destroy(c);
}

static void *getter(void *arg)
{
    get(arg, NULL, SQLQ_OK);
    return NULL;
}

static void test_credential_cache_one_request_at_a_time(void **state)
{
    (void)state;
    fake_source f = {.now = 0, .lifetime = 3600, .delay_ms = 50};
    sqlq_token_cache *c = cache_for(&f);
    pthread_t t[8];
    for (size_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, getter, c);
    for (size_t i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&f.fetches), 1);
    assert_int_equal(atomic_load(&f.most_in_flight), 1);
    sqlq_token_cache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credential_cache_refresh_rule),
        cmocka_unit_test(test_credential_cache_cached_until_refresh_time),
        cmocka_unit_test(test_credential_cache_short_token_refreshed_half_way),
        cmocka_unit_test(test_credential_cache_failed_refresh_keeps_valid_token),
        cmocka_unit_test(test_credential_cache_expired_and_failing_is_an_outage),
        cmocka_unit_test(test_credential_cache_refused_token_dropped_once),
        cmocka_unit_test(test_credential_cache_one_request_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
