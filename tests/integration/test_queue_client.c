/* queue_client against a real Azurite: every operation, pop receipt rules, visibility, the
 * 64 KiB limit, put_many with 16 in flight, and the failures that must not be retried. */
#include "queue_client.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    sqlq_account *account;
    sqlq_queue_client *client;       /* base64 */
    sqlq_queue_client *plain_client; /* plain */
    char queue[64];
} fixture;

static sqlq_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        sqlq_error_clear(&err);                                                                    \
        sqlq_result r_ = (call);                                                                   \
        if (r_ != SQLQ_OK) {                                                                       \
            char line_[700];                                                                       \
            sqlq_error_format(&err, line_, sizeof(line_));                                        \
            fail_msg("%s -> %s: %s", #call, sqlq_strerror(r_), line_);                            \
        }                                                                                          \
    } while (0)

#define FAILS(call, expect)                                                                        \
    do {                                                                                           \
        sqlq_error_clear(&err);                                                                    \
        sqlq_result r_ = (call);                                                                   \
        if (r_ != (expect))                                                                        \
            fail_msg("%s -> %s (%s), expected %s", #call, sqlq_strerror(r_), err.message,          \
                     sqlq_strerror(expect));                                                       \
        assert_int_equal(err.code, (expect));                                                      \
    } while (0)

static sqlq_queue_client *make_client(sqlq_account *a, sqlq_encoding enc)
{
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.encoding = enc;
    sqlq_queue_client *c = NULL;
    OK(sqlq_queue_client_create(a, &o, &c, &err));
    return c;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    char *conn = sqlq_test_azurite_conn();
    sqlq_error_clear(&err);
    if (sqlq_account_parse(conn, &f->account, &err) != SQLQ_OK)
        return -1;
    free(conn);
    f->client = make_client(f->account, SQLQ_ENCODING_BASE64);
    f->plain_client = make_client(f->account, SQLQ_ENCODING_PLAIN);
    sqlq_test_unique_name("qc", f->queue, sizeof(f->queue));
    bool created = false;
    OK(sqlq_queue_create(f->client, f->queue, &created, &err));
    assert_true(created);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sqlq_error_clear(&err);
    if (sqlq_queue_delete(f->client, f->queue, &err) != SQLQ_OK)
        fprintf(stderr, "cleanup: %s\n", err.message);
    sqlq_queue_client_destroy(f->client);
    sqlq_queue_client_destroy(f->plain_client);
    sqlq_account_destroy(f->account);
    free(f);
    return 0;
}

static long long count_of(fixture *f, const char *queue)
{
    sqlq_queue_props p;
    OK(sqlq_queue_properties(f->client, queue, &p, &err));
    return p.approximate_count;
}

static void test_queue_create_exists_list_delete(void **state)
{
    fixture *f = *state;
    bool created = true, exists = false;
    OK(sqlq_queue_create(f->client, f->queue, &created, &err)); /* idempotent */
    assert_false(created);
    OK(sqlq_queue_exists(f->client, f->queue, &exists, &err));
    assert_true(exists);

    char prefix[64], names[3][80];
    sqlq_test_unique_name("lst", prefix, sizeof(prefix));
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof(names[i]), "%s-%d", prefix, i);
        OK(sqlq_queue_create(f->client, names[i], &created, &err));
        assert_true(created);
    }
    char **list = NULL;
    size_t n = 0;
    OK(sqlq_queue_list(f->client, prefix, &list, &n, &err));
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(list[i], names[i]);
    sqlq_queue_names_free(list, n);
    for (int i = 0; i < 3; i++)
        OK(sqlq_queue_delete(f->client, names[i], &err));
    OK(sqlq_queue_exists(f->client, names[0], &exists, &err));
    assert_false(exists);
    FAILS(sqlq_queue_delete(f->client, names[0], &err), SQLQ_E_NOT_FOUND);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.azure_code, "QueueNotFound");
    assert_true(err.request_id[0] != '\0');
    assert_false(err.transient);
    sqlq_queue_props p;
    FAILS(sqlq_queue_properties(f->client, names[0], &p, &err), SQLQ_E_NOT_FOUND);
    FAILS(sqlq_queue_put(f->client, names[0], "x", 1, NULL, NULL, &err), SQLQ_E_NOT_FOUND);
    FAILS(sqlq_queue_create(f->client, "Bad_Name", &created, &err), SQLQ_E_INVALID);
}

static void test_queue_put_peek_get_delete_clear(void **state)
{
    fixture *f = *state;
    const char body[] = "{\"id\":1,\"name\":\"\xc5\xbelu\xc5\xa5ou\xc4\x8dk\xc3\xbd <&> k\xc5\xaf\xc5\x88\"}";
    sqlq_message put;
    OK(sqlq_queue_put(f->client, f->queue, body, strlen(body), NULL, &put, &err));
    assert_non_null(put.id);
    assert_non_null(put.pop_receipt);
    assert_true(put.insertion_time > 1700000000);
    assert_int_equal(put.expiration_time - put.insertion_time, 604800); /* default TTL */
    assert_int_equal(count_of(f, f->queue), 1);

    sqlq_message_list l;
    OK(sqlq_queue_peek(f->client, f->queue, 32, &l, &err));
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].id, put.id);
    assert_null(l.items[0].pop_receipt);
    assert_int_equal(l.items[0].dequeue_count, 0);
    sqlq_buf dec;
    sqlq_buf_init(&dec, 0);
    OK(sqlq_codec_decode(SQLQ_ENCODING_BASE64, l.items[0].text, l.items[0].text_len, &dec, &err));
    assert_string_equal(sqlq_buf_str(&dec), body);
    sqlq_buf_free(&dec);
    sqlq_message_list_free(&l);

    OK(sqlq_queue_get(f->client, f->queue, 32, 30, &l, &err));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].dequeue_count, 1);
    assert_non_null(l.items[0].pop_receipt);
    assert_true(l.items[0].next_visible_time >= put.insertion_time + 29);
    OK(sqlq_queue_delete_message(f->client, f->queue, l.items[0].id, l.items[0].pop_receipt, &err));
    FAILS(sqlq_queue_delete_message(f->client, f->queue, l.items[0].id, l.items[0].pop_receipt, &err),
          SQLQ_E_NOT_FOUND);
    assert_string_equal(err.azure_code, "MessageNotFound");
    sqlq_message_list_free(&l);
    sqlq_message_free(&put);
    assert_int_equal(count_of(f, f->queue), 0);

    /* Plain text arrives as written, XML specials included. */
    const char plain[] = "a < b && c > d \"quoted\" 'single' \r\n end";
    OK(sqlq_queue_put(f->plain_client, f->queue, plain, strlen(plain), NULL, NULL, &err));
    OK(sqlq_queue_peek(f->client, f->queue, 1, &l, &err));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].text_len, strlen(plain));
    assert_memory_equal(l.items[0].text, plain, strlen(plain));
    sqlq_message_list_free(&l);

    for (int i = 0; i < 5; i++)
        OK(sqlq_queue_put(f->client, f->queue, "m", 1, NULL, NULL, &err));
    assert_int_equal(count_of(f, f->queue), 6);
    OK(sqlq_queue_clear(f->client, f->queue, &err));
    assert_int_equal(count_of(f, f->queue), 0);
    OK(sqlq_queue_get(f->client, f->queue, 32, 30, &l, &err));
    assert_int_equal(l.count, 0);
    sqlq_message_list_free(&l);
}

static void test_queue_pop_receipt_after_update(void **state)
{
    fixture *f = *state;
    OK(sqlq_queue_put(f->client, f->queue, "first", 5, NULL, NULL, &err));
    sqlq_message_list l;
    OK(sqlq_queue_get(f->client, f->queue, 1, 60, &l, &err));
    assert_int_equal(l.count, 1);
    const char *id = l.items[0].id, *old = l.items[0].pop_receipt;

    char *fresh = NULL;
    int64_t next_visible = 0;
    OK(sqlq_queue_update_message(f->client, f->queue, id, old, 60, "second", 6, false, &fresh,
                                 &next_visible, &err));
    assert_non_null(fresh);
    assert_string_not_equal(fresh, old);
    assert_true(next_visible > time(NULL) + 50);

    /* The old receipt is dead for update and delete; the new one works. */
    char *unused = NULL;
    FAILS(sqlq_queue_update_message(f->client, f->queue, id, old, 0, NULL, 0, false, &unused, NULL,
                                    &err),
          SQLQ_E_POP_RECEIPT);
    assert_null(unused);
    FAILS(sqlq_queue_delete_message(f->client, f->queue, id, old, &err), SQLQ_E_POP_RECEIPT);
    assert_int_equal(err.http_status, 400);
    assert_string_equal(err.azure_code, "PopReceiptMismatch");
    assert_false(err.transient);

    /* Make it visible again with its new body, keeping the newest receipt. */
    char *newest = NULL;
    OK(sqlq_queue_update_message(f->client, f->queue, id, fresh, 0, NULL, 0, false, &newest, NULL,
                                 &err));
    sqlq_message_list peeked;
    OK(sqlq_queue_peek(f->client, f->queue, 1, &peeked, &err));
    assert_int_equal(peeked.count, 1);
    assert_string_equal(peeked.items[0].text, "c2Vjb25k"); /* base64("second") */
    sqlq_message_list_free(&peeked);
    FAILS(sqlq_queue_delete_message(f->client, f->queue, id, fresh, &err), SQLQ_E_POP_RECEIPT);
    OK(sqlq_queue_delete_message(f->client, f->queue, id, newest, &err));
    free(fresh);
    free(newest);
    sqlq_message_list_free(&l);
}

static void test_queue_visibility_hides_then_returns(void **state)
{
    fixture *f = *state;
    OK(sqlq_queue_put(f->client, f->queue, "v", 1, NULL, NULL, &err));
    sqlq_message_list l;
    OK(sqlq_queue_get(f->client, f->queue, 1, 1, &l, &err));
    assert_int_equal(l.count, 1);
    sqlq_message_list_free(&l);
    OK(sqlq_queue_get(f->client, f->queue, 1, 1, &l, &err));
    assert_int_equal(l.count, 0); /* hidden */
    sqlq_message_list_free(&l);
    int found = 0;
    for (int i = 0; i < 40 && !found; i++) { /* back within about a second */
        usleep(100 * 1000);
        OK(sqlq_queue_get(f->client, f->queue, 1, 30, &l, &err));
        if (l.count == 1) {
            found = 1;
            assert_int_equal(l.items[0].dequeue_count, 2);
            OK(sqlq_queue_delete_message(f->client, f->queue, l.items[0].id, l.items[0].pop_receipt,
                                         &err));
        }
        sqlq_message_list_free(&l);
    }
    assert_true(found);

    /* Put with a delay: invisible until it passes; TTL -1 never expires. */
    sqlq_put_options opt = {2, -1, false};
    sqlq_message put;
    OK(sqlq_queue_put(f->client, f->queue, "later", 5, &opt, &put, &err));
    assert_int_equal(put.expiration_time, 253402300799LL); /* 9999-12-31T23:59:59Z */
    assert_true(put.next_visible_time >= put.insertion_time + 2);
    sqlq_message_free(&put);
    OK(sqlq_queue_peek(f->client, f->queue, 32, &l, &err));
    assert_int_equal(l.count, 0);
    sqlq_message_list_free(&l);
    sqlq_put_options bad = {10, 5, false};
    FAILS(sqlq_queue_put(f->client, f->queue, "x", 1, &bad, NULL, &err), SQLQ_E_INVALID);
    FAILS(sqlq_queue_get(f->client, f->queue, 33, 30, &l, &err), SQLQ_E_INVALID);
    FAILS(sqlq_queue_get(f->client, f->queue, 1, 0, &l, &err), SQLQ_E_INVALID);
}

static void round_trip(sqlq_queue_client *c, const char *queue, sqlq_encoding enc, size_t size)
{
    char *body = malloc(size);
    for (size_t i = 0; i < size; i++)
        body[i] = (char)('a' + i % 26);
    OK(sqlq_queue_put(c, queue, body, size, NULL, NULL, &err));
    sqlq_message_list l;
    OK(sqlq_queue_get(c, queue, 1, 30, &l, &err));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].text_len, SQLQ_MESSAGE_MAX_TEXT);
    sqlq_buf dec;
    sqlq_buf_init(&dec, 0);
    OK(sqlq_codec_decode(enc, l.items[0].text, l.items[0].text_len, &dec, &err));
    assert_int_equal(dec.len, size);
    assert_memory_equal(dec.data, body, size);
    OK(sqlq_queue_delete_message(c, queue, l.items[0].id, l.items[0].pop_receipt, &err));
    sqlq_buf_free(&dec);
    sqlq_message_list_free(&l);
    free(body);
}

static void test_queue_64k_limit(void **state)
{
    fixture *f = *state;
    round_trip(f->client, f->queue, SQLQ_ENCODING_BASE64, 49152);
    round_trip(f->plain_client, f->queue, SQLQ_ENCODING_PLAIN, SQLQ_MESSAGE_MAX_TEXT);

    /* One byte more is refused before anything is sent: a client whose endpoint has no server
     * behind it still answers TOO_LARGE, not a network error. */
    char *conn = NULL;
    sqlq_account *nowhere = NULL;
    assert_true(asprintf(&conn, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                                "AccountKey=%s;QueueEndpoint=http://127.0.0.1:9/devstoreaccount1",
                         "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                         "KBHBeksoGMGw==") > 0);
    OK(sqlq_account_parse(conn, &nowhere, &err));
    free(conn);
    sqlq_queue_client *clients[] = {f->client, make_client(nowhere, SQLQ_ENCODING_BASE64),
                                    f->plain_client, make_client(nowhere, SQLQ_ENCODING_PLAIN)};
    char *big = calloc(1, SQLQ_MESSAGE_MAX_TEXT + 1);
    memset(big, 'x', SQLQ_MESSAGE_MAX_TEXT + 1);
    for (int i = 0; i < 4; i++) {
        size_t len = i < 2 ? 49153 : SQLQ_MESSAGE_MAX_TEXT + 1;
        FAILS(sqlq_queue_put(clients[i], f->queue, big, len, NULL, NULL, &err), SQLQ_E_TOO_LARGE);
        assert_int_equal(err.http_status, 0);
        assert_false(err.transient);
    }
    sqlq_put_item item = {big, 49153, SQLQ_OK, {0}};
    OK(sqlq_queue_put_many(clients[1], f->queue, &item, 1, 4, NULL));
    assert_int_equal(item.result, SQLQ_E_TOO_LARGE);
    assert_int_equal(count_of(f, f->queue), 0);
    sqlq_queue_client_destroy(clients[1]);
    sqlq_queue_client_destroy(clients[3]);
    sqlq_account_destroy(nowhere);
    free(big);
}

static void test_queue_put_many_16_in_flight_exactly_once(void **state)
{
    fixture *f = *state;
    enum { N = 400 };
    static char bodies[N][32];
    static sqlq_put_item items[N];
    for (int i = 0; i < N; i++) {
        snprintf(bodies[i], sizeof(bodies[i]), "message-%d", i);
        items[i].body = bodies[i];
        items[i].len = strlen(bodies[i]);
        items[i].result = SQLQ_E_INVALID;
    }
    OK(sqlq_queue_put_many(f->client, f->queue, items, N, 16, NULL));
    for (int i = 0; i < N; i++)
        if (items[i].result != SQLQ_OK)
            fail_msg("item %d: %s", i, items[i].error.message);
    assert_int_equal(count_of(f, f->queue), N);

    static int seen[N];
    memset(seen, 0, sizeof(seen));
    int total = 0;
    sqlq_buf dec;
    sqlq_buf_init(&dec, 0);
    for (;;) {
        sqlq_message_list l;
        OK(sqlq_queue_get(f->client, f->queue, 32, 60, &l, &err));
        if (l.count == 0) {
            sqlq_message_list_free(&l);
            break;
        }
        for (size_t i = 0; i < l.count; i++) {
            sqlq_buf_reset(&dec);
            OK(sqlq_codec_decode(SQLQ_ENCODING_BASE64, l.items[i].text, l.items[i].text_len, &dec,
                                 &err));
            int k = -1;
            assert_int_equal(sscanf(sqlq_buf_str(&dec), "message-%d", &k), 1);
            assert_true(k >= 0 && k < N);
            seen[k]++;
            total++;
            OK(sqlq_queue_delete_message(f->client, f->queue, l.items[i].id, l.items[i].pop_receipt,
                                         &err));
        }
        sqlq_message_list_free(&l);
    }
    sqlq_buf_free(&dec);
    assert_int_equal(total, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
}

static void test_queue_wrong_key_is_final_not_retried(void **state)
{
    fixture *f = *state;
    char *conn = NULL, *good = sqlq_test_azurite_conn();
    sqlq_account *wrong = NULL;
    assert_true(asprintf(&conn, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                                "AccountKey=%s;QueueEndpoint=%s",
                         "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ==",
                         strstr(good, "http://")) > 0);
    free(good);
    *strchr(strstr(conn, "QueueEndpoint="), ';') = '\0';
    OK(sqlq_account_parse(conn, &wrong, &err));
    free(conn);
    sqlq_queue_client *c = make_client(wrong, SQLQ_ENCODING_BASE64);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    FAILS(sqlq_queue_put(c, f->queue, "x", 1, NULL, NULL, &err), SQLQ_E_HTTP);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(err.http_status, 403);
    assert_string_equal(err.azure_code, "AuthenticationFailed");
    assert_false(err.transient);
    assert_true(t1.tv_sec - t0.tv_sec < 2); /* no back-off happened */
    sqlq_queue_client_destroy(c);
    sqlq_account_destroy(wrong);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_create_exists_list_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_put_peek_get_delete_clear, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_pop_receipt_after_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_visibility_hides_then_returns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_64k_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_put_many_16_in_flight_exactly_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queue_wrong_key_is_final_not_retried, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
