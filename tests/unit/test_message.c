/* Unit tests of the message library as a whole: every shape written by message/envelope is
 * valid under docs/message.schema.json (checked with ajv through
 * tests/support/validate_messages.js), reads back (msg_parse, poison_envelope) as the changes
 * that were written, and malformed bodies are refused with their reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "envelope.h"
#include "msg_parse.h"
#include "poison_envelope.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TS 1714564800123LL /* 2024-05-01T12:00:00.123Z */

static sqlq_msg_change change(sqlq_op op, int64_t version, const char *key, const char *row)
{
    sqlq_msg_change c = {.op = op, .version = version};
    c.key = json_loads(key, 0, NULL);
    c.row = row ? json_loads(row, 0, NULL) : NULL;
    assert_non_null(c.key);
    return c;
}

static void changes_free(sqlq_msg_change *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(c[i].key);
        json_decref(c[i].row);
        json_decref(c[i].changed);
        json_decref(c[i].before);
    }
}

/* A sample of every op, one row too large for the limit (key-only), one key too large (poison),
 * one update whose before image is too large (sent without it, "before_truncated"). */
#define NSAMPLE 7
static void samples(sqlq_msg_change out[NSAMPLE])
{
    out[0] = change(SQLQ_OP_INSERT, 1, "{\"id\":1}", "{\"id\":1,\"name\":\"a\",\"ok\":true}");
    out[1] =
        change(SQLQ_OP_UPDATE, 2, "{\"id\":2,\"r\":\"eu\"}", "{\"id\":2,\"r\":\"eu\",\"v\":null}");
    out[2] = change(SQLQ_OP_DELETE, 3, "{\"id\":3}", NULL);
    out[3] = change(SQLQ_OP_READ, 0, "{\"id\":4}", "{\"id\":4,\"name\":\"\\u001f\"}");
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    out[4] = change(SQLQ_OP_UPDATE, 5, "{\"id\":5}", NULL);
    out[4].row = json_pack("{s:i, s:s}", "id", 5, "pad", big);
    out[5] = change(SQLQ_OP_INSERT, 6, "{\"id\":6}", NULL);
    json_object_set_new(out[5].key, "k", json_string(big));
    out[5].row = json_deep_copy(out[5].key);
    out[6] = change(SQLQ_OP_UPDATE, 7, "{\"id\":7}", "{\"id\":7,\"pad\":\"y\"}");
    out[6].changed = json_pack("[s]", "pad");
    out[6].before = json_pack("{s:i, s:s}", "id", 7, "pad", big);
}

static sqlq_envelope_config config(sqlq_envelope_format f)
{
    sqlq_envelope_config c;
    sqlq_envelope_config_default(&c);
    c.table = "orders";
    c.format = f;
    c.max_text = 2048; /* samples 4 and 5 do not fit */
    return c;
}

/* Every message of every shape the library writes for the samples. */
static sqlq_envelope_list write_all(const sqlq_msg_change *ch)
{
    sqlq_envelope_list l = {0};
    for (int f = SQLQ_FORMAT_ROW; f <= SQLQ_FORMAT_FUNCTIONS; f++) {
        sqlq_envelope_config cfg = config((sqlq_envelope_format)f);
        assert_int_equal(sqlq_envelope_build(&cfg, ch, NSAMPLE, TS, &l, NULL), SQLQ_OK);
        cfg.oversize = SQLQ_OVERSIZE_POISON;
        assert_int_equal(sqlq_envelope_build(&cfg, ch, NSAMPLE, TS, &l, NULL), SQLQ_OK);
        assert_int_equal(sqlq_envelope_add_poison(&cfg, &ch[0], 0, "publish failed", TS, &l, NULL),
                         SQLQ_OK);
    }
    return l;
}

/* Runs the ajv validator over bodies given as JSON lines; its exit status. */
static int validate(const char *const *bodies, const size_t *lens, size_t n)
{
    char path[] = "/tmp/sqlq_test_message_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        json_t *line = json_pack("{s:s%}", "body", bodies[i], lens[i]);
        assert_non_null(line);
        assert_int_equal(json_dumpf(line, f, JSON_COMPACT), 0);
        fputc('\n', f);
        json_decref(line);
    }
    assert_int_equal(fclose(f), 0);
    const char *src = sqlq_test_source_dir();
    int rc =
        sqlq_test_sh("node '%s/tests/support/validate_messages.js' '%s/docs/message.schema.json' "
                     "< '%s' >/dev/null",
                     src, src, path);
    unlink(path);
    return rc;
}

static void test_message_every_shape_is_valid_under_the_schema(void **state)
{
    (void)state;
    sqlq_msg_change ch[NSAMPLE];
    samples(ch);
    sqlq_envelope_list l = write_all(ch);
    const char **bodies = calloc(l.count, sizeof(*bodies));
    size_t *lens = calloc(l.count, sizeof(*lens));
    bool poison = false, truncated = false, before_dropped = false;
    for (size_t i = 0; i < l.count; i++) {
        bodies[i] = l.items[i].body;
        lens[i] = l.items[i].len;
        poison = poison || l.items[i].dest == SQLQ_DEST_POISON;
        truncated = truncated || l.items[i].truncated;
        before_dropped = before_dropped || strstr(l.items[i].body, "\"before_truncated\":true");
    }
    assert_true(poison && truncated && before_dropped); /* the sample covers all three */
    assert_int_equal(validate(bodies, lens, l.count), 0);
    /* The check can fail: a message the schema refuses makes the validator fail. */
    const char *bad = "{\"op\":\"upsert\",\"key\":{\"id\":1}}";
    size_t bad_len = strlen(bad);
    assert_int_not_equal(validate(&bad, &bad_len, 1), 0);
    free(bodies);
    free(lens);
    sqlq_envelope_list_free(&l);
    changes_free(ch, NSAMPLE);
}

/* The change read back matches the one written (functions shape: its Operation and Item). */
static void assert_same(const sqlq_msg_change *want, const sqlq_msg_change *got,
                        sqlq_envelope_format f)
{
    if (f == SQLQ_FORMAT_FUNCTIONS) {
        assert_int_equal(got->op, want->op == SQLQ_OP_READ ? SQLQ_OP_UPDATE : want->op);
        assert_false(got->has_version);
        assert_true(json_equal(got->row, got->truncated || want->op == SQLQ_OP_DELETE ? want->key
                                                                                      : want->row));
        return;
    }
    assert_int_equal(got->op, want->op);
    assert_true(got->has_version);
    assert_int_equal(got->version, want->version);
    assert_true(json_equal(got->key, want->key));
    if (got->truncated)
        assert_null(got->row);
    else if (want->op == SQLQ_OP_DELETE)
        assert_null(got->row);
    else
        assert_true(json_equal(got->row, want->row));
}

static void test_message_reads_back_what_was_written(void **state)
{
    (void)state;
    sqlq_msg_change ch[NSAMPLE];
    samples(ch);
    for (int f = SQLQ_FORMAT_ROW; f <= SQLQ_FORMAT_FUNCTIONS; f++) {
        sqlq_envelope_config cfg = config((sqlq_envelope_format)f);
        sqlq_envelope_list l = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, ch, NSAMPLE, TS, &l, NULL), SQLQ_OK);
        size_t read = 0;
        for (size_t i = 0; i < l.count; i++) {
            if (l.items[i].dest == SQLQ_DEST_POISON)
                continue;
            sqlq_msg_parsed p;
            sqlq_error err;
            sqlq_error_clear(&err);
            if (sqlq_msg_parse(l.items[i].body, l.items[i].len, &p, &err) != SQLQ_OK)
                fail_msg("%s: %.300s", err.message, l.items[i].body);
            assert_int_equal(p.format, f);
            assert_int_equal(p.n, l.items[i].nchanges);
            for (size_t j = 0; j < p.n; j++)
                assert_same(&ch[l.items[i].changes[j]], &p.items[j], (sqlq_envelope_format)f);
            read += p.n;
            sqlq_msg_parsed_free(&p);
        }
        assert_int_equal(read, NSAMPLE - 1); /* all but the key too large */
        sqlq_envelope_list_free(&l);
    }
    changes_free(ch, NSAMPLE);
}

/* The poison envelope gives back the exact bytes of the message it wraps, which read back as
 * the change; a body not exactly of its shape is not an envelope of sqlq's. */
static void test_message_poison_envelope_round_trip(void **state)
{
    (void)state;
    sqlq_msg_change ch[NSAMPLE];
    samples(ch);
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    sqlq_envelope_list main_l = {0}, poison_l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, ch, 1, TS, &main_l, NULL), SQLQ_OK);
    assert_int_equal(sqlq_envelope_add_poison(&cfg, &ch[0], 0, "refused", TS, &poison_l, NULL),
                     SQLQ_OK);
    const char *inner = NULL;
    size_t inner_len = 0;
    assert_true(sqlq_poison_envelope_read(poison_l.items[0].body, poison_l.items[0].len, &inner,
                                          &inner_len));
    assert_int_equal(inner_len, main_l.items[0].len);
    assert_memory_equal(inner, main_l.items[0].body, inner_len);
    sqlq_msg_parsed p;
    assert_int_equal(sqlq_msg_parse(inner, inner_len, &p, NULL), SQLQ_OK);
    assert_same(&ch[0], &p.items[0], SQLQ_FORMAT_ROW);
    sqlq_msg_parsed_free(&p);
    static const char *const not_ours[] = {
        "{\"sqlq_poison\":2,\"reason\":\"r\",\"message\":{}}",
        "{\"sqlq_poison\":1,\"reason\":\"r\",\"message\":{},\"x\":1}",
        "{\"sqlq_poison\":1,\"reason\":\"r\",\"reason\":\"s\",\"message\":{}}",
        "{\"sqlq_poison\":1,\"reason\":7,\"message\":{}}",
        "{\"sqlq_poison\":1,\"reason\":\"r\",\"message\":\"m\"}",
        "{\"sqlq_poison\":1,\"reason\":\"r\",\"message\":{} trailing",
    };
    for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
        if (sqlq_poison_envelope_read(not_ours[i], strlen(not_ours[i]), &inner, &inner_len))
            fail_msg("taken for an envelope: %s", not_ours[i]);
    sqlq_envelope_list_free(&main_l);
    sqlq_envelope_list_free(&poison_l);
    changes_free(ch, NSAMPLE);
}

static void test_message_refuses_malformed_bodies(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        sqlq_result code;
        const char *says;
    } cases[] = {
        {"not json", SQLQ_E_PARSE, "not JSON"},
        {"{\"op\":\"insert\",\"op\":\"delete\"}", SQLQ_E_PARSE, "duplicate JSON fields"},
        {"{\"id\":1}", SQLQ_E_PARSE, "not a change message"},
        {"42", SQLQ_E_PARSE, "not a change message"},
        {"{\"op\":7,\"key\":{\"id\":1}}", SQLQ_E_PARSE, "without \"op\""},
        {"{\"op\":\"upsert\",\"key\":{\"id\":1}}", SQLQ_E_PARSE, "unknown op \"upsert\""},
        {"{\"op\":\"delete\",\"key\":[1]}", SQLQ_E_INVALID, "without a \"key\" object"},
        {"{\"op\":\"delete\",\"key\":{\"id\":1},\"version\":\"3\"}", SQLQ_E_INVALID,
         "\"version\" is not an integer"},
        {"{\"op\":\"delete\",\"key\":{\"id\":1},\"version\":9007199254740993}", SQLQ_E_INVALID,
         "implausible"},
        {"{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":[1]}", SQLQ_E_PARSE,
         "\"row\" is not a JSON object"},
        {"{\"op\":\"read\",\"key\":{\"id\":1},\"version\":1}", SQLQ_E_INVALID,
         "read without its row, and not marked truncated"},
        {"{\"changes\":[{\"op\":\"delete\",\"key\":{\"id\":1}},3]}", SQLQ_E_PARSE,
         "changes[1] is not an object"},
        {"[{\"Operation\":3,\"Item\":{\"id\":1}}]", SQLQ_E_PARSE, "unknown Operation 3"},
        {"[{\"Operation\":0,\"Item\":[1]}]", SQLQ_E_PARSE,
         "without integer Operation and object Item"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sqlq_msg_parsed p;
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_result r = sqlq_msg_parse(cases[i].body, strlen(cases[i].body), &p, &err);
        if (r != cases[i].code || !strstr(err.message, cases[i].says))
            fail_msg("%s: got %d \"%s\", want %d \"%s\"", cases[i].body, r, err.message,
                     cases[i].code, cases[i].says);
        assert_null(p.items);
        assert_null(p.root);
    }
    /* What the shape allows is read; what a reader needs beyond it is flagged, not refused. */
    const char *loose = "{\"changes\":[{\"op\":\"update\",\"key\":{\"id\":1},\"truncated\":true},"
                        "{\"op\":\"delete\",\"key\":{\"id\":2},\"row\":null,\"version\":4}]}";
    sqlq_msg_parsed p;
    assert_int_equal(sqlq_msg_parse(loose, strlen(loose), &p, NULL), SQLQ_OK);
    assert_int_equal(p.n, 2);
    assert_true(p.items[0].truncated);
    assert_false(p.items[0].has_version);
    assert_null(p.items[0].row);
    assert_true(p.items[1].has_version);
    assert_int_equal(p.items[1].version, 4);
    sqlq_msg_parsed_free(&p);
}

/* Backfill's read message, byte for byte as it has always been written: row after ts; key-only
 * with "truncated" last when the row does not fit. */
static void test_message_read_shape_bytes(void **state)
{
    (void)state;
    sqlq_msg_change ch = change(SQLQ_OP_READ, 42, "{\"id\":1}", "{\"id\":1,\"v\":1.5,\"n\":null}");
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    cfg.table = "t";
    cfg.bridge_name = "bf";
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, &ch, 1, TS, &l, NULL), SQLQ_OK);
    char id[33];
    assert_int_equal(sqlq_envelope_id("bf", "t", ch.key, 42, id, NULL), SQLQ_OK);
    char want[512];
    snprintf(want, sizeof(want),
             "{\"id\":\"%s\",\"op\":\"read\",\"table\":\"t\",\"key\":{\"id\":1},\"version\":42,"
             "\"bridge\":\"bf\",\"ts\":\"2024-05-01T12:00:00.123Z\",\"row\":{\"id\":1,\"v\":1.5,"
             "\"n\":null}}",
             id);
    assert_string_equal(l.items[0].body, want);
    sqlq_envelope_list_free(&l);
    cfg.max_text = 210; /* base64: the full message is 228 bytes, the key-only one 208 */
    assert_int_equal(sqlq_envelope_build(&cfg, &ch, 1, TS, &l, NULL), SQLQ_OK);
    snprintf(want, sizeof(want),
             "{\"id\":\"%s\",\"op\":\"read\",\"table\":\"t\",\"key\":{\"id\":1},\"version\":42,"
             "\"bridge\":\"bf\",\"ts\":\"2024-05-01T12:00:00.123Z\",\"truncated\":true}",
             id);
    assert_string_equal(l.items[0].body, want);
    sqlq_envelope_list_free(&l);
    changes_free(&ch, 1);
}

static void test_message_op_names(void **state)
{
    (void)state;
    sqlq_op op;
    for (int i = SQLQ_OP_INSERT; i <= SQLQ_OP_READ; i++) {
        assert_true(sqlq_op_parse(sqlq_op_name((sqlq_op)i), &op));
        assert_int_equal(op, i);
    }
    assert_string_equal(sqlq_op_name(SQLQ_OP_READ), "read");
    assert_false(sqlq_op_parse("Insert", &op));
    assert_false(sqlq_op_parse(NULL, &op));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_every_shape_is_valid_under_the_schema),
        cmocka_unit_test(test_message_reads_back_what_was_written),
        cmocka_unit_test(test_message_poison_envelope_round_trip),
        cmocka_unit_test(test_message_refuses_malformed_bodies),
        cmocka_unit_test(test_message_read_shape_bytes),
        cmocka_unit_test(test_message_op_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
