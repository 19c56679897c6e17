/* Unit tests of message/envelope: ids, row/batch/functions shapes, packing under the limit,
 * truncation and poison of oversized changes. Pure: no network, no database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS 1714564800123LL /* 2024-05-01T12:00:00.123Z */

static sqlq_msg_change make_change(sqlq_op op, int64_t version, const char *key_json, const char *row_json)
{
    sqlq_msg_change c;
    memset(&c, 0, sizeof(c));
    c.op = op;
    c.version = version;
    c.key = json_loads(key_json, 0, NULL);
    c.row = row_json ? json_loads(row_json, 0, NULL) : NULL;
    assert_non_null(c.key);
    if (row_json)
        assert_non_null(c.row);
    return c;
}

static void free_change(sqlq_msg_change *c)
{
    json_decref(c->key);
    json_decref(c->row);
}

static sqlq_envelope_config config(sqlq_envelope_format f)
{
    sqlq_envelope_config c;
    sqlq_envelope_config_default(&c);
    c.table = "orders";
    c.format = f;
    return c;
}

static json_t *parse(const sqlq_envelope *e)
{
    json_error_t jerr;
    json_t *j = json_loadb(e->body, e->len, 0, &jerr);
    if (!j)
        fail_msg("message is not JSON: %s: %.200s", jerr.text, e->body);
    return j;
}

/* A row of about `size` bytes of JSON. */
static char *big_row(int id, size_t size)
{
    char *pad = malloc(size + 1);
    memset(pad, 'x', size);
    pad[size] = '\0';
    json_t *r = json_pack("{s:i, s:s}", "id", id, "pad", pad);
    char *s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    free(pad);
    return s;
}

static void test_envelope_id_matches_documented_algorithm(void **state)
{
    (void)state;
    char id[33];
    json_t *key = json_pack("{s:s, s:i}", "region", "eu", "id", 1); /* unsorted on purpose */
    assert_int_equal(sqlq_envelope_id("default", "orders", key, 7, id, NULL), SQLQ_OK);
    /* printf 'default\0orders\0{"id":1,"region":"eu"}\0%s' 7 | sha256sum | cut -c1-32 */
    assert_string_equal(id, "1e5c50425ff0348b102e6f5f282037d3");
    json_decref(key);
    key = json_pack("{s:s}", "a", "x");
    assert_int_equal(sqlq_envelope_id("b1", "t", key, -3, id, NULL), SQLQ_OK);
    assert_string_equal(id, "d7ed69f3c31c1f4fcd0da173b15b2007");
    json_decref(key);
}

/* Control characters are escaped as RFC 8785 and Python write them: \u001f, lower-case hex. */
static void test_envelope_canonical_key_lowercase_escapes(void **state)
{
    (void)state;
    json_t *key = json_pack("{s:s, s:s}", "b", "x\x1f\x01\n", "a", "lit\\u001F");
    char *canon = sqlq_envelope_canonical_key(key);
    assert_non_null(canon);
    assert_string_equal(canon, "{\"a\":\"lit\\\\u001F\",\"b\":\"x\\u001f\\u0001\\n\"}");
    free(canon);
    json_decref(key);
}

static void test_envelope_id_stable_and_distinct(void **state)
{
    (void)state;
    char a[33], b[33], c[33], d[33], e[33];
    json_t *k1 = json_pack("{s:i, s:s}", "id", 5, "k", "v");
    json_t *k2 = json_pack("{s:s, s:i}", "k", "v", "id", 5);
    assert_int_equal(sqlq_envelope_id("default", "orders", k1, 10, a, NULL), SQLQ_OK);
    assert_int_equal(sqlq_envelope_id("default", "orders", k2, 10, b, NULL), SQLQ_OK);
    assert_string_equal(a, b); /* key order does not matter */
    assert_int_equal(sqlq_envelope_id("default", "orders", k1, 11, c, NULL), SQLQ_OK);
    assert_string_not_equal(a, c); /* another version is another change */
    assert_int_equal(sqlq_envelope_id("other", "orders", k1, 10, d, NULL), SQLQ_OK);
    assert_string_not_equal(a, d);
    assert_int_equal(sqlq_envelope_id("default", "orders2", k1, 10, e, NULL), SQLQ_OK);
    assert_string_not_equal(a, e);
    assert_int_equal(strlen(a), 32);
    json_decref(k1);
    json_decref(k2);
}

static void test_envelope_ts_iso8601(void **state)
{
    (void)state;
    char ts[25];
    sqlq_envelope_format_ts(TS, ts);
    assert_string_equal(ts, "2024-05-01T12:00:00.123Z");
    sqlq_envelope_format_ts(0, ts);
    assert_string_equal(ts, "1970-01-01T00:00:00.000Z");
}

static void test_envelope_row_mode_fields(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    sqlq_msg_change ch[3] = {
        make_change(SQLQ_OP_INSERT, 3, "{\"id\":1}", "{\"id\":1,\"name\":\"a\",\"price\":\"9.50\",\"ok\":true}"),
        make_change(SQLQ_OP_UPDATE, 4, "{\"id\":2}", "{\"id\":2,\"name\":null,\"price\":\"1\",\"ok\":false}"),
        make_change(SQLQ_OP_DELETE, 5, "{\"id\":3}", NULL),
    };
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, ch, 3, TS, &l, NULL), SQLQ_OK);
    assert_int_equal(l.count, 3);
    const char *ops[] = {"insert", "update", "delete"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(l.items[i].dest, SQLQ_DEST_MAIN);
        assert_int_equal(l.items[i].nchanges, 1);
        assert_int_equal(l.items[i].changes[0], i);
        json_t *m = parse(&l.items[i]);
        char id[33];
        assert_int_equal(sqlq_envelope_id("default", "orders", ch[i].key, ch[i].version, id, NULL), SQLQ_OK);
        assert_string_equal(json_string_value(json_object_get(m, "id")), id);
        assert_string_equal(json_string_value(json_object_get(m, "op")), ops[i]);
        assert_string_equal(json_string_value(json_object_get(m, "table")), "orders");
        assert_string_equal(json_string_value(json_object_get(m, "bridge")), "default");
        assert_string_equal(json_string_value(json_object_get(m, "ts")), "2024-05-01T12:00:00.123Z");
        assert_int_equal(json_integer_value(json_object_get(m, "version")), ch[i].version);
        assert_true(json_equal(json_object_get(m, "key"), ch[i].key));
        assert_null(json_object_get(m, "truncated"));
        json_t *row = json_object_get(m, "row");
        assert_non_null(row); /* present: null for a delete */
        if (i < 2)
            assert_true(json_equal(row, ch[i].row));
        else
            assert_true(json_is_null(row));
        json_decref(m);
    }
    sqlq_envelope_list_free(&l);
    for (int i = 0; i < 3; i++)
        free_change(&ch[i]);
}

static void test_envelope_row_gone_is_delete(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    sqlq_msg_change ch = make_change(SQLQ_OP_UPDATE, 9, "{\"a\":1,\"b\":\"x\"}", NULL);
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, &ch, 1, TS, &l, NULL), SQLQ_OK);
    json_t *m = parse(&l.items[0]);
    assert_string_equal(json_string_value(json_object_get(m, "op")), "delete");
    assert_true(json_is_null(json_object_get(m, "row")));
    json_decref(m);
    sqlq_envelope_list_free(&l);
    free_change(&ch);
}

/* Every change in exactly one message, in order; every message within the limit; no message
 * could have taken the next change too (greedy packing). */
static void check_packing(sqlq_envelope_format f, size_t n, size_t row_size)
{
    sqlq_envelope_config cfg = config(f);
    sqlq_msg_change *ch = calloc(n, sizeof(*ch));
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "{\"id\":%zu}", i);
        char *row = big_row((int)i, row_size + (i * 37) % 700);
        ch[i] = make_change(i % 3 == 2 ? SQLQ_OP_DELETE : SQLQ_OP_UPDATE, (int64_t)i + 1, key,
                            i % 3 == 2 ? NULL : row);
        free(row);
    }
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, ch, n, TS, &l, NULL), SQLQ_OK);
    assert_true(l.count > 1);
    size_t next = 0;
    for (size_t m = 0; m < l.count; m++) {
        const sqlq_envelope *e = &l.items[m];
        assert_int_equal(e->dest, SQLQ_DEST_MAIN);
        assert_true(sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, e->len) <= SQLQ_MESSAGE_MAX_TEXT);
        assert_int_equal(e->len, strlen(e->body));
        json_t *j = parse(e);
        json_t *arr = f == SQLQ_FORMAT_BATCH ? json_object_get(j, "changes") : j;
        assert_true(json_is_array(arr));
        assert_int_equal(json_array_size(arr), e->nchanges);
        for (size_t k = 0; k < e->nchanges; k++, next++) {
            assert_int_equal(e->changes[k], next);
            json_t *el = json_array_get(arr, k);
            if (f == SQLQ_FORMAT_BATCH) {
                assert_int_equal(json_integer_value(json_object_get(el, "version")), ch[next].version);
            } else {
                json_t *item = json_object_get(el, "Item");
                assert_int_equal(json_integer_value(json_object_get(el, "Operation")), (int)ch[next].op);
                assert_true(json_equal(item, ch[next].row ? ch[next].row : ch[next].key));
            }
        }
        if (m + 1 < l.count) { /* the next change would not have fitted */
            json_t *nj = parse(&l.items[m + 1]);
            json_t *nx = json_array_get(f == SQLQ_FORMAT_BATCH ? json_object_get(nj, "changes") : nj, 0);
            char *s = json_dumps(nx, JSON_COMPACT);
            assert_true(sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, e->len + 1 + strlen(s)) >
                        SQLQ_MESSAGE_MAX_TEXT);
            free(s);
            json_decref(nj);
        }
        json_decref(j);
    }
    assert_int_equal(next, n);
    sqlq_envelope_list_free(&l);
    for (size_t i = 0; i < n; i++)
        free_change(&ch[i]);
    free(ch);
}

static void test_envelope_batch_packs_under_limit(void **state)
{
    (void)state;
    check_packing(SQLQ_FORMAT_BATCH, 300, 900);
}

static void test_envelope_functions_shape_packs(void **state)
{
    (void)state;
    check_packing(SQLQ_FORMAT_FUNCTIONS, 200, 1500);
}

static void test_envelope_functions_delete_has_key_only(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_FUNCTIONS);
    sqlq_msg_change ch[2] = {make_change(SQLQ_OP_DELETE, 2, "{\"a\":1,\"b\":2}", NULL),
                         make_change(SQLQ_OP_INSERT, 3, "{\"a\":1,\"b\":3}", "{\"a\":1,\"b\":3,\"c\":\"z\"}")};
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, ch, 2, TS, &l, NULL), SQLQ_OK);
    assert_int_equal(l.count, 1);
    json_t *j = parse(&l.items[0]);
    json_t *want = json_loads("[{\"Operation\":2,\"Item\":{\"a\":1,\"b\":2}},"
                              "{\"Operation\":0,\"Item\":{\"a\":1,\"b\":3,\"c\":\"z\"}}]", 0, NULL);
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    sqlq_envelope_list_free(&l);
    free_change(&ch[0]);
    free_change(&ch[1]);
}

static void test_envelope_oversize_truncates_to_key(void **state)
{
    (void)state;
    sqlq_envelope_format formats[] = {SQLQ_FORMAT_ROW, SQLQ_FORMAT_BATCH, SQLQ_FORMAT_FUNCTIONS};
    for (int f = 0; f < 3; f++) {
        sqlq_envelope_config cfg = config(formats[f]);
        char *row = big_row(7, 50000); /* 50 KB of JSON: over 64 KiB after base64 */
        sqlq_msg_change ch[2] = {make_change(SQLQ_OP_UPDATE, 8, "{\"id\":7}", row),
                             make_change(SQLQ_OP_INSERT, 9, "{\"id\":8}", "{\"id\":8}")};
        free(row);
        sqlq_envelope_list l = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, ch, 2, TS, &l, NULL), SQLQ_OK);
        assert_true(l.count >= 1);
        assert_int_equal(l.items[0].dest, SQLQ_DEST_MAIN);
        assert_true(l.items[0].truncated);
        assert_int_equal(l.items[0].changes[0], 0);
        json_t *j = parse(&l.items[0]);
        json_t *el = formats[f] == SQLQ_FORMAT_ROW      ? j
                     : formats[f] == SQLQ_FORMAT_BATCH ? json_array_get(json_object_get(j, "changes"), 0)
                                                       : json_array_get(j, 0);
        if (formats[f] == SQLQ_FORMAT_FUNCTIONS) {
            assert_true(json_is_true(json_object_get(el, "Truncated")));
            assert_true(json_equal(json_object_get(el, "Item"), ch[0].key));
        } else {
            assert_true(json_is_true(json_object_get(el, "truncated")));
            assert_null(json_object_get(el, "row"));
            assert_true(json_equal(json_object_get(el, "key"), ch[0].key));
            assert_string_equal(json_string_value(json_object_get(el, "op")), "update");
        }
        json_decref(j);
        sqlq_envelope_list_free(&l);
        free_change(&ch[0]);
        free_change(&ch[1]);
    }
}

static void test_envelope_oversize_poison_policy(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    cfg.oversize = SQLQ_OVERSIZE_POISON;
    cfg.max_text = 4096; /* a lower limit works the same way */
    char *row = big_row(1, 5000);
    sqlq_msg_change ch[2] = {make_change(SQLQ_OP_INSERT, 1, "{\"id\":1}", "{\"id\":0}"),
                         make_change(SQLQ_OP_INSERT, 2, "{\"id\":2}", row)};
    free(row);
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, ch, 2, TS, &l, NULL), SQLQ_OK);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.items[0].dest, SQLQ_DEST_MAIN);
    assert_int_equal(l.items[1].dest, SQLQ_DEST_POISON);
    assert_int_equal(l.items[1].changes[0], 1);
    assert_true(sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, l.items[1].len) <= 4096);
    json_t *j = parse(&l.items[1]);
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "too large"));
    json_t *m = json_object_get(j, "message"); /* the original did not fit: key only */
    assert_true(json_is_true(json_object_get(m, "truncated")));
    assert_true(json_equal(json_object_get(m, "key"), ch[1].key));
    json_decref(j);
    sqlq_envelope_list_free(&l);
    free_change(&ch[0]);
    free_change(&ch[1]);
}

static void test_envelope_huge_key_goes_to_poison(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    cfg.max_text = 2048;
    char *key = big_row(1, 3000);
    sqlq_msg_change ch = make_change(SQLQ_OP_INSERT, 1, key, key);
    free(key);
    sqlq_envelope_list l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, &ch, 1, TS, &l, NULL), SQLQ_OK);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].dest, SQLQ_DEST_POISON);
    assert_true(sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, l.items[0].len) <= 2048);
    json_t *j = parse(&l.items[0]);
    json_t *m = json_object_get(j, "message");
    assert_true(json_is_true(json_object_get(m, "key_omitted")));
    assert_int_equal(strlen(json_string_value(json_object_get(m, "id"))), 32);
    json_decref(j);
    sqlq_envelope_list_free(&l);
    free_change(&ch);
}

static void test_envelope_poison_wraps_original(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_BATCH);
    sqlq_msg_change ch = make_change(SQLQ_OP_UPDATE, 12, "{\"id\":4}", "{\"id\":4,\"v\":\"q\"}");
    sqlq_envelope_list main_l = {0}, poison_l = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, &ch, 1, TS, &main_l, NULL), SQLQ_OK);
    assert_int_equal(sqlq_envelope_add_poison(&cfg, &ch, 0, "HTTP 400 InvalidXmlDocument", TS, &poison_l, NULL),
                     SQLQ_OK);
    assert_int_equal(poison_l.count, 1);
    assert_int_equal(poison_l.items[0].dest, SQLQ_DEST_POISON);
    json_t *p = parse(&poison_l.items[0]);
    json_t *orig = parse(&main_l.items[0]);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "HTTP 400 InvalidXmlDocument");
    assert_true(json_equal(json_object_get(p, "message"), orig)); /* exactly what was sent */
    json_decref(p);
    json_decref(orig);
    sqlq_envelope_list_free(&main_l);
    sqlq_envelope_list_free(&poison_l);
    free_change(&ch);
}

/* A change whose text plain encoding cannot carry (U+FFFE) travels in a message of its own in
 * the batch and functions formats, so that the put's refusal counts against it alone; its poison
 * copy writes the character as a JSON escape, which plain text carries: the same JSON. */
static void test_envelope_plain_uncarriable_change_alone(void **state)
{
    (void)state;
    const sqlq_envelope_format formats[] = {SQLQ_FORMAT_BATCH, SQLQ_FORMAT_FUNCTIONS};
    for (size_t f = 0; f < 2; f++) {
        sqlq_envelope_config cfg = config(formats[f]);
        cfg.encoding = SQLQ_ENCODING_PLAIN;
        sqlq_msg_change ch[3] = {
            make_change(SQLQ_OP_INSERT, 1, "{\"id\":1}", "{\"id\":1,\"s\":\"ok\"}"),
            make_change(SQLQ_OP_INSERT, 2, "{\"id\":2}", "{\"id\":2,\"s\":\"x \xef\xbf\xbe y\"}"),
            make_change(SQLQ_OP_INSERT, 3, "{\"id\":3}", "{\"id\":3,\"s\":\"after\"}")};
        sqlq_envelope_list l = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, ch, 3, TS, &l, NULL), SQLQ_OK);
        assert_int_equal(l.count, 2);
        for (size_t i = 0; i < l.count; i++) {
            bool hostile = l.items[i].nchanges == 1 && l.items[i].changes[0] == 1;
            assert_int_equal(sqlq_codec_carries(SQLQ_ENCODING_PLAIN, l.items[i].body, l.items[i].len),
                             !hostile);
            if (!hostile) /* 1 and 3 share a message */
                assert_int_equal(l.items[i].nchanges, 2);
            json_decref(parse(&l.items[i]));
        }
        sqlq_envelope_list poison = {0};
        assert_int_equal(sqlq_envelope_add_poison(&cfg, &ch[1], 1, "plain", TS, &poison, NULL), SQLQ_OK);
        assert_int_equal(poison.count, 1);
        assert_true(sqlq_codec_carries(SQLQ_ENCODING_PLAIN, poison.items[0].body, poison.items[0].len));
        assert_non_null(strstr(poison.items[0].body, "x \\ufffe y"));
        json_t *p = parse(&poison.items[0]);
        json_t *m = json_object_get(p, "message");
        json_t *e = formats[f] == SQLQ_FORMAT_BATCH ? json_array_get(json_object_get(m, "changes"), 0)
                                                    : json_array_get(m, 0);
        json_t *row = json_object_get(e, formats[f] == SQLQ_FORMAT_BATCH ? "row" : "Item");
        assert_string_equal(json_string_value(json_object_get(row, "s")), "x \xef\xbf\xbe y");
        json_decref(p);
        sqlq_envelope_list_free(&poison);
        sqlq_envelope_list_free(&l);
        for (size_t i = 0; i < 3; i++)
            free_change(&ch[i]);
    }
}

/* "changed" only on an update and "before" on an update or a delete, after "row";
 * neither on an insert nor on a truncated (key-only) change. */
static void test_envelope_changed_and_before(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    sqlq_op ops[] = {SQLQ_OP_INSERT, SQLQ_OP_UPDATE, SQLQ_OP_DELETE};
    const char *want[] = {"", "changed,before", "before"};
    for (size_t i = 0; i < 3; i++) {
        sqlq_msg_change c = make_change(ops[i], 7, "{\"id\":1}",
                                        ops[i] == SQLQ_OP_DELETE ? NULL : "{\"id\":1,\"a\":2}");
        c.changed = json_loads("[\"a\"]", 0, NULL);
        c.before = json_loads("{\"id\":1,\"a\":1}", 0, NULL);
        sqlq_envelope_list out = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, &c, 1, TS, &out, NULL), SQLQ_OK);
        json_t *m = parse(&out.items[0]);
        bool ch = json_object_get(m, "changed") != NULL, be = json_object_get(m, "before") != NULL;
        char got[40];
        snprintf(got, sizeof(got), "%s%s%s", ch ? "changed" : "", ch && be ? "," : "", be ? "before" : "");
        assert_string_equal(got, want[i]);
        if (ops[i] == SQLQ_OP_UPDATE) {
            assert_string_equal(json_string_value(json_array_get(json_object_get(m, "changed"), 0)), "a");
            assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "before"), "a")), 1);
            assert_true(strstr(out.items[0].body, "\"row\"") < strstr(out.items[0].body, "\"changed\""));
        }
        json_decref(m);
        sqlq_envelope_list_free(&out);
        json_decref(c.changed);
        json_decref(c.before);
        free_change(&c);
    }
    /* too large: key only, without them */
    cfg.max_text = 200;
    char *row = big_row(1, 400);
    sqlq_msg_change c = make_change(SQLQ_OP_UPDATE, 7, "{\"id\":1}", row);
    c.changed = json_loads("[\"pad\"]", 0, NULL);
    c.before = json_loads("{\"id\":1}", 0, NULL);
    sqlq_envelope_list out = {0};
    assert_int_equal(sqlq_envelope_build(&cfg, &c, 1, TS, &out, NULL), SQLQ_OK);
    assert_non_null(strstr(out.items[0].body, "truncated"));
    assert_null(strstr(out.items[0].body, "changed"));
    assert_null(strstr(out.items[0].body, "before"));
    sqlq_envelope_list_free(&out);
    json_decref(c.changed);
    json_decref(c.before);
    free_change(&c);
    free(row);
}

/* The row format's text is written straight (envelope_text.c); the poison copy still dumps the
 * element object (envelope.c's row_object): both give the same bytes, for every operation,
 * with and without changed and before, and for names and values JSON must escape. */
static void test_envelope_text_same_bytes_as_object(void **state)
{
    (void)state;
    sqlq_envelope_config cfg = config(SQLQ_FORMAT_ROW);
    cfg.table = "or\"ders\\\xc3\xa9";
    cfg.bridge_name = "br\tidge";
    sqlq_op ops[] = {SQLQ_OP_INSERT, SQLQ_OP_UPDATE, SQLQ_OP_DELETE, SQLQ_OP_READ, SQLQ_OP_UPDATE};
    for (size_t i = 0; i < 5 * 4; i++) {
        sqlq_op op = ops[i % 5];
        bool gone = i % 5 == 4 || op == SQLQ_OP_DELETE; /* a row gone: now a delete */
        sqlq_msg_change c = make_change(op, -7 + (int64_t)i * 1000003, "{\"id\":\"k\\u0001\\\"\",\"n\":-3}",
                                        gone ? NULL : "{\"id\":\"k\",\"a\":[1.5,null,true],\"b\":{\"z\":\"\\n\"}}");
        if (i / 5 & 1)
            c.changed = json_loads("[\"a\",\"b\"]", 0, NULL);
        if (i / 5 & 2)
            c.before = json_loads("{\"id\":\"k\",\"a\":0.25}", 0, NULL);
        sqlq_envelope_list out = {0}, poison = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, &c, 1, TS, &out, NULL), SQLQ_OK);
        assert_int_equal(sqlq_envelope_add_poison(&cfg, &c, 0, "r", TS, &poison, NULL), SQLQ_OK);
        const char *p = strstr(poison.items[0].body, "\"message\":");
        assert_non_null(p);
        p += strlen("\"message\":");
        size_t plen = poison.items[0].len - (size_t)(p - poison.items[0].body) - 1;
        assert_int_equal(out.items[0].len, plen);
        assert_memory_equal(out.items[0].body, p, plen);
        sqlq_envelope_list_free(&out);
        sqlq_envelope_list_free(&poison);
        json_decref(c.changed);
        json_decref(c.before);
        free_change(&c);
    }
}

/* Too large with its before image: before goes first (row and changed kept, marked
 * "before_truncated", not "truncated"), in the row and batch formats; the key-only form only
 * when that is still too large (test_envelope_changed_and_before). */
static void test_envelope_oversize_drops_before_first(void **state)
{
    (void)state;
    sqlq_envelope_format formats[] = {SQLQ_FORMAT_ROW, SQLQ_FORMAT_BATCH};
    for (int f = 0; f < 2; f++) {
        sqlq_envelope_config cfg = config(formats[f]);
        cfg.max_text = 600;
        char *before = big_row(1, 1000);
        sqlq_msg_change c = make_change(SQLQ_OP_UPDATE, 7, "{\"id\":1}", "{\"id\":1,\"pad\":\"y\"}");
        c.changed = json_loads("[\"pad\"]", 0, NULL);
        c.before = json_loads(before, 0, NULL);
        free(before);
        sqlq_envelope_list out = {0};
        assert_int_equal(sqlq_envelope_build(&cfg, &c, 1, TS, &out, NULL), SQLQ_OK);
        assert_int_equal(out.count, 1);
        assert_int_equal(out.items[0].dest, SQLQ_DEST_MAIN);
        assert_false(out.items[0].truncated);
        json_t *j = parse(&out.items[0]);
        json_t *m = formats[f] == SQLQ_FORMAT_ROW ? j : json_array_get(json_object_get(j, "changes"), 0);
        assert_true(json_is_true(json_object_get(m, "before_truncated")));
        assert_null(json_object_get(m, "before"));
        assert_null(json_object_get(m, "truncated"));
        assert_true(json_equal(json_object_get(m, "row"), c.row));
        assert_string_equal(json_string_value(json_array_get(json_object_get(m, "changed"), 0)), "pad");
        json_decref(j);
        sqlq_envelope_list_free(&out);
        /* the poison policy still poisons it: nothing of it is left out */
        cfg.oversize = SQLQ_OVERSIZE_POISON;
        assert_int_equal(sqlq_envelope_build(&cfg, &c, 1, TS, &out, NULL), SQLQ_OK);
        assert_int_equal(out.items[0].dest, SQLQ_DEST_POISON);
        sqlq_envelope_list_free(&out);
        json_decref(c.changed);
        json_decref(c.before);
        free_change(&c);
    }
}

static void test_envelope_parse_names(void **state)
{
    (void)state;
    sqlq_envelope_format f;
    sqlq_oversize_policy p;
    assert_true(sqlq_envelope_format_parse("functions", &f));
    assert_int_equal(f, SQLQ_FORMAT_FUNCTIONS);
    assert_false(sqlq_envelope_format_parse("rows", &f));
    assert_true(sqlq_oversize_policy_parse("poison", &p));
    assert_int_equal(p, SQLQ_OVERSIZE_POISON);
    assert_false(sqlq_oversize_policy_parse("drop", &p));
    assert_string_equal(sqlq_envelope_format_name(SQLQ_FORMAT_BATCH), "batch");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envelope_id_matches_documented_algorithm),
        cmocka_unit_test(test_envelope_id_stable_and_distinct),
        cmocka_unit_test(test_envelope_canonical_key_lowercase_escapes),
        cmocka_unit_test(test_envelope_ts_iso8601),
        cmocka_unit_test(test_envelope_row_mode_fields),
        cmocka_unit_test(test_envelope_row_gone_is_delete),
        cmocka_unit_test(test_envelope_batch_packs_under_limit),
        cmocka_unit_test(test_envelope_functions_shape_packs),
        cmocka_unit_test(test_envelope_functions_delete_has_key_only),
        cmocka_unit_test(test_envelope_oversize_truncates_to_key),
        cmocka_unit_test(test_envelope_oversize_poison_policy),
        cmocka_unit_test(test_envelope_huge_key_goes_to_poison),
        cmocka_unit_test(test_envelope_poison_wraps_original),
        cmocka_unit_test(test_envelope_plain_uncarriable_change_alone),
        cmocka_unit_test(test_envelope_parse_names),
        cmocka_unit_test(test_envelope_changed_and_before),
        cmocka_unit_test(test_envelope_text_same_bytes_as_object),
        cmocka_unit_test(test_envelope_oversize_drops_before_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
