/* The record of dequeues given back without an attempt: what one consumer writes, another (or
 * the next run) reads; forgotten entries, expired ones and garbage lines are dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "abandoned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct dir {
    char path[64];
    char file[128];
} dir;

static void dir_make(dir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/sqlq-abandoned-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    snprintf(d->file, sizeof(d->file), "%s/record", d->path);
}

static void dir_remove(dir *d)
{
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", d->file);
    unlink(d->file);
    unlink(lock);
    rmdir(d->path);
}

static sqlq_abandoned *open_ok(const char *path)
{
    sqlq_abandoned *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_abandoned_open(path, &a, &err), SQLQ_OK);
    return a;
}

static void test_abandoned_discounts_earlier_dequeues_across_runs(void **state)
{
    (void)state;
    dir d;
    dir_make(&d);
    int64_t later = (int64_t)time(NULL) + 3600;
    sqlq_abandoned *a = open_ok(d.file);
    assert_int_equal(sqlq_abandoned_discount(a, "m1", 9), 0);
    assert_int_equal(sqlq_abandoned_record(a, "m1", 1, later, NULL), SQLQ_OK);
    assert_int_equal(sqlq_abandoned_record(a, "m1", 2, later, NULL), SQLQ_OK);
    assert_int_equal(sqlq_abandoned_record(a, "m1", 2, later, NULL), SQLQ_OK); /* once */
    assert_int_equal(sqlq_abandoned_record(a, "m2", 1, later, NULL), SQLQ_OK);
    assert_int_equal(sqlq_abandoned_discount(a, "m1", 3), 2);
    assert_int_equal(sqlq_abandoned_discount(a, "m1", 2), 1); /* only dequeues before this one */
    /* another consumer (or the next run) on the same file sees them, and what it forgets */
    sqlq_abandoned *b = open_ok(d.file);
    assert_int_equal(sqlq_abandoned_discount(b, "m1", 3), 2);
    sqlq_abandoned_forget(b, "m1");
    assert_int_equal(sqlq_abandoned_discount(b, "m1", 3), 0);
    assert_int_equal(sqlq_abandoned_discount(a, "m1", 3), 0);
    assert_int_equal(sqlq_abandoned_discount(a, "m2", 2), 1);
    sqlq_abandoned_close(a);
    sqlq_abandoned_close(b);
    dir_remove(&d);
}

static void test_abandoned_drops_expired_and_garbage(void **state)
{
    (void)state;
    dir d;
    dir_make(&d);
    FILE *f = fopen(d.file, "w");
    assert_non_null(f);
    long long now = (long long)time(NULL);
    fprintf(f, "a live 1 %lld %lld\n", now + 3600, now);
    fprintf(f, "a gone 1 %lld %lld\n", now - 10, now - 100);        /* expired */
    fprintf(f, "a old 1 %lld %lld\n", now + 3600, now - 40 * 86400); /* never claimed */
    fprintf(f, "a bad id! 1 2 3\nx nonsense\na live 0 %lld %lld\na live -1 1 1\n", now, now);
    fprintf(f, "a part 1 %lld", now + 3600); /* a line cut short: not read */
    fclose(f);
    sqlq_abandoned *a = open_ok(d.file);
    assert_int_equal(sqlq_abandoned_discount(a, "live", 5), 1);
    assert_int_equal(sqlq_abandoned_discount(a, "gone", 5), 0);
    assert_int_equal(sqlq_abandoned_discount(a, "old", 5), 0);
    assert_int_equal(sqlq_abandoned_discount(a, "part", 5), 0);
    sqlq_abandoned_close(a);
    dir_remove(&d);
}

static void test_abandoned_path_names_queue_and_account(void **state)
{
    (void)state;
    char a[200], b[200];
    sqlq_abandoned_path("/s", "https://one.queue.core.windows.net", "orders", a, sizeof(a));
    sqlq_abandoned_path("/s", "https://two.queue.core.windows.net", "orders", b, sizeof(b));
    assert_non_null(strstr(a, "/s/abandoned-orders-"));
    assert_string_not_equal(a, b);
    assert_int_equal(sqlq_abandoned_discount(NULL, "x", 3), 0);
    assert_int_equal(sqlq_abandoned_record(NULL, "x", 3, 0, NULL), SQLQ_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abandoned_discounts_earlier_dequeues_across_runs),
        cmocka_unit_test(test_abandoned_drops_expired_and_garbage),
        cmocka_unit_test(test_abandoned_path_names_queue_and_account),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
