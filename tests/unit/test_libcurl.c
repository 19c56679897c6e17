/* libcurl's process-wide set-up runs once however many users start: the queue client's
 * transport and every `consume --http` handler. curl_global_init is not thread
 * safe, so a second call racing a running transfer is a bug. Counted by wrapping the symbol at
 * link time (-Wl,--wrap=curl_global_init, tests/consumer.cmake). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "handler_http.h"
#include "libcurl.h"

#include <curl/curl.h>

CURLcode __real_curl_global_init(long flags);
CURLcode __wrap_curl_global_init(long flags);

static int global_inits;

CURLcode __wrap_curl_global_init(long flags)
{
    global_inits++;
    return __real_curl_global_init(flags);
}

static void handlers_and_queue_share_one_init(void **state)
{
    (void)state;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_handler_http *a = NULL, *b = NULL;
    assert_int_equal(sqlq_handler_http_create("http://127.0.0.1:9/a", 1000, &a, &err), SQLQ_OK);
    assert_int_equal(sqlq_handler_http_create("http://127.0.0.1:9/b", 1000, &b, &err), SQLQ_OK);
    assert_int_equal(sqlq_libcurl_init(&err), SQLQ_OK);
    assert_int_equal(sqlq_libcurl_init(&err), SQLQ_OK);
    assert_int_equal(global_inits, 1);
    sqlq_handler_http_destroy(a);
    sqlq_handler_http_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handlers_and_queue_share_one_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
