/* sql/postgres/pgoutput: every message kind of proto_version 1 decoded from bytes built here,
 * and every malformed form refused with SQLQ_E_PARSE (never read past the end). */
#include "pgoutput.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

typedef struct wire {
    char b[512];
    size_t n;
} wire;

static void u8(wire *w, unsigned v) { w->b[w->n++] = (char)v; }
static void be(wire *w, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--)
        u8(w, (unsigned)((v >> (8 * i)) & 0xff));
}
static void str(wire *w, const char *s) {
    size_t l = strlen(s) + 1;
    memcpy(w->b + w->n, s, l);
    w->n += l;
}
static void text(wire *w, const char *s) {
    u8(w, 't');
    be(w, strlen(s), 4);
    memcpy(w->b + w->n, s, strlen(s));
    w->n += strlen(s);
}

static sqlq_pgo_msg decode_ok(const wire *w) {
    sqlq_pgo_msg m;
    sqlq_error e = {0};
    assert_int_equal(sqlq_pgoutput_decode(w->b, w->n, &m, &e), SQLQ_OK);
    return m;
}

static void test_pgoutput_begin_commit(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'B'); be(&w, 0x16B3748ull, 8); be(&w, 123456789, 8); be(&w, 777, 4);
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_BEGIN);
    assert_int_equal(m.u.begin.final_lsn, 0x16B3748ull);
    assert_int_equal(m.u.begin.commit_time, 123456789);
    assert_int_equal(m.u.begin.xid, 777);
    sqlq_pgoutput_free(&m);
    w.n = 0;
    u8(&w, 'C'); u8(&w, 0); be(&w, 0x100, 8); be(&w, 0x1F0, 8); be(&w, 5, 8);
    m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_COMMIT);
    assert_int_equal(m.u.commit.commit_lsn, 0x100);
    assert_int_equal(m.u.commit.end_lsn, 0x1F0);
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_relation(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'R'); be(&w, 16384, 4); str(&w, "public"); str(&w, "orders"); u8(&w, 'd');
    be(&w, 2, 2);
    u8(&w, 1); str(&w, "id"); be(&w, 23, 4); be(&w, 0xffffffffu, 4);
    u8(&w, 0); str(&w, "note"); be(&w, 1043, 4); be(&w, 24, 4);
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_RELATION);
    assert_int_equal(m.u.relation.relid, 16384);
    assert_string_equal(m.u.relation.nspname, "public");
    assert_string_equal(m.u.relation.relname, "orders");
    assert_int_equal(m.u.relation.replident, 'd');
    assert_int_equal(m.u.relation.ncols, 2);
    assert_int_equal(m.u.relation.cols[0].flags, 1);
    assert_string_equal(m.u.relation.cols[0].name, "id");
    assert_int_equal(m.u.relation.cols[0].typmod, -1);
    assert_int_equal(m.u.relation.cols[1].type_oid, 1043);
    assert_int_equal(m.u.relation.cols[1].typmod, 24);
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_insert_null_unchanged_text(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'I'); be(&w, 16384, 4); u8(&w, 'N'); be(&w, 3, 2);
    text(&w, "42"); u8(&w, 'n'); u8(&w, 'u');
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_INSERT);
    assert_int_equal(m.u.change.old_kind, 0);
    assert_int_equal(m.u.change.new_tuple.ncols, 3);
    assert_int_equal(m.u.change.new_tuple.cols[0].kind, 't');
    assert_int_equal(m.u.change.new_tuple.cols[0].len, 2);
    assert_memory_equal(m.u.change.new_tuple.cols[0].data, "42", 2);
    assert_int_equal(m.u.change.new_tuple.cols[1].kind, 'n');
    assert_int_equal(m.u.change.new_tuple.cols[2].kind, 'u');
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_update_with_and_without_old(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'U'); be(&w, 9, 4); u8(&w, 'N'); be(&w, 1, 2); text(&w, "a");
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.u.change.old_kind, 0);
    assert_int_equal(m.u.change.new_tuple.ncols, 1);
    sqlq_pgoutput_free(&m);
    w.n = 0;
    u8(&w, 'U'); be(&w, 9, 4); u8(&w, 'O'); be(&w, 2, 2); text(&w, "1"); text(&w, "old");
    u8(&w, 'N'); be(&w, 2, 2); text(&w, "1"); text(&w, "new");
    m = decode_ok(&w);
    assert_int_equal(m.u.change.old_kind, 'O');
    assert_int_equal(m.u.change.old_tuple.ncols, 2);
    assert_memory_equal(m.u.change.old_tuple.cols[1].data, "old", 3);
    assert_memory_equal(m.u.change.new_tuple.cols[1].data, "new", 3);
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_delete_key(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'D'); be(&w, 9, 4); u8(&w, 'K'); be(&w, 2, 2); text(&w, "7"); u8(&w, 'n');
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_DELETE);
    assert_int_equal(m.u.change.old_kind, 'K');
    assert_int_equal(m.u.change.new_tuple.ncols, 0);
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_truncate_type_origin_message(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'T'); be(&w, 2, 4); u8(&w, 3); be(&w, 10, 4); be(&w, 11, 4);
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.u.truncate.nrelids, 2);
    assert_int_equal(m.u.truncate.flags, SQLQ_PGO_TRUNCATE_CASCADE | SQLQ_PGO_TRUNCATE_RESTART_SEQS);
    assert_int_equal(m.u.truncate.relids[1], 11);
    sqlq_pgoutput_free(&m);
    w.n = 0;
    u8(&w, 'Y'); be(&w, 70000, 4); str(&w, "public"); str(&w, "mood");
    m = decode_ok(&w);
    assert_string_equal(m.u.type.typname, "mood");
    sqlq_pgoutput_free(&m);
    w.n = 0;
    u8(&w, 'O'); be(&w, 0x55, 8); str(&w, "node_a");
    m = decode_ok(&w);
    assert_string_equal(m.u.origin.name, "node_a");
    sqlq_pgoutput_free(&m);
    w.n = 0;
    u8(&w, 'M'); u8(&w, 1); be(&w, 0x99, 8); str(&w, "sqlq"); be(&w, 3, 4);
    memcpy(w.b + w.n, "a\0b", 3);
    w.n += 3;
    m = decode_ok(&w);
    assert_int_equal(m.u.message.flags, SQLQ_PGO_MESSAGE_TRANSACTIONAL);
    assert_string_equal(m.u.message.prefix, "sqlq");
    assert_int_equal(m.u.message.len, 3);
    sqlq_pgoutput_free(&m);
}

static void test_pgoutput_unknown_is_not_an_error(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'S'); be(&w, 1, 4); u8(&w, 1); /* a proto 2 stream start: not ours, skipped */
    sqlq_pgo_msg m = decode_ok(&w);
    assert_int_equal(m.kind, SQLQ_PGO_UNKNOWN);
    assert_int_equal(m.tag, 'S');
    assert_string_equal(sqlq_pgoutput_kind_name(m.kind), "unknown");
    sqlq_pgoutput_free(&m);
}

static void refused(const wire *w, const char *needle) {
    sqlq_pgo_msg m;
    sqlq_error e = {0};
    assert_int_equal(sqlq_pgoutput_decode(w->b, w->n, &m, &e), SQLQ_E_PARSE);
    if (!strstr(e.message, needle))
        fail_msg("'%s' does not say '%s'", e.message, needle);
}

static void test_pgoutput_malformed_refused(void **state) {
    (void)state;
    wire w = {.n = 0};
    u8(&w, 'B'); be(&w, 1, 8);
    refused(&w, "begin commit time");
    w.n = 0;
    u8(&w, 'R'); be(&w, 1, 4); u8(&w, 'p'); /* namespace without its NUL */
    refused(&w, "relation namespace");
    w.n = 0;
    u8(&w, 'I'); be(&w, 1, 4); u8(&w, 'N'); be(&w, 1, 2); u8(&w, 't'); be(&w, 100, 4); u8(&w, 'x');
    refused(&w, "column value beyond the message");
    w.n = 0;
    u8(&w, 'I'); be(&w, 1, 4); u8(&w, 'N'); be(&w, 1, 2); u8(&w, 'z');
    refused(&w, "column kind");
    w.n = 0;
    u8(&w, 'I'); be(&w, 1, 4); u8(&w, 'N'); be(&w, 60000, 2);
    refused(&w, "tuple column count beyond");
    w.n = 0;
    u8(&w, 'I'); be(&w, 1, 4); u8(&w, 'K'); be(&w, 0, 2);
    refused(&w, "an insert with an old tuple");
    w.n = 0;
    u8(&w, 'D'); be(&w, 1, 4); u8(&w, 'N'); be(&w, 0, 2);
    refused(&w, "a delete without");
    w.n = 0;
    u8(&w, 'U'); be(&w, 1, 4); u8(&w, 'K'); be(&w, 0, 2); u8(&w, 'X');
    refused(&w, "expected the new tuple marker");
    w.n = 0;
    u8(&w, 'T'); be(&w, 0x40000000u, 4); u8(&w, 0);
    refused(&w, "truncate relation count beyond");
    w.n = 0;
    u8(&w, 'C'); u8(&w, 0); be(&w, 1, 8); be(&w, 2, 8); be(&w, 3, 8); u8(&w, 0);
    refused(&w, "bytes left after the message");
    sqlq_pgo_msg m;
    assert_int_equal(sqlq_pgoutput_decode("", 0, &m, NULL), SQLQ_E_PARSE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pgoutput_begin_commit),
        cmocka_unit_test(test_pgoutput_relation),
        cmocka_unit_test(test_pgoutput_insert_null_unchanged_text),
        cmocka_unit_test(test_pgoutput_update_with_and_without_old),
        cmocka_unit_test(test_pgoutput_delete_key),
        cmocka_unit_test(test_pgoutput_truncate_type_origin_message),
        cmocka_unit_test(test_pgoutput_unknown_is_not_an_error),
        cmocka_unit_test(test_pgoutput_malformed_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
