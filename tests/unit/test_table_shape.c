/* sql/table: comparing two descriptions of a table (what the capture and the cursor source
 * do when a table's columns change under them) and the words logged for it. */
#include "table.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A table of up to 4 columns "name:type", the key given by column indexes. */
typedef struct shape {
    sqlq_column cols[4];
    size_t key[4];
    sqlq_table t;
} shape;

static void make(shape *s, const char *const *cols, size_t n, const size_t *key, size_t nkey)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        const char *colon = strchr(cols[i], ':');
        s->cols[i].name = strndup(cols[i], (size_t)(colon - cols[i]));
        s->cols[i].type = strdup(colon + 1);
    }
    for (size_t k = 0; k < nkey; k++) {
        s->key[k] = key[k];
        s->cols[key[k]].in_key = true;
        s->cols[key[k]].key_pos = (int)k + 1;
    }
    s->t = (sqlq_table){.columns = s->cols, .ncolumns = n, .key = s->key, .nkey = nkey};
}

static void drop(shape *s)
{
    for (size_t i = 0; i < s->t.ncolumns; i++) {
        free(s->cols[i].name);
        free(s->cols[i].type);
    }
}

static void test_table_shape_compare(void **state)
{
    (void)state;
    static const size_t k0[] = {0}, k1[] = {1}, k01[] = {0, 1};
    static const char *const base[] = {"id:integer", "note:text", "qty:integer"};
    static const char *const added[] = {"id:integer", "note:text", "qty:integer", "extra:text"};
    static const char *const renamed[] = {"id:integer", "note:text", "quantity:integer"};
    static const char *const retyped[] = {"id:integer", "note:text", "qty:text"};
    static const char *const key_retyped[] = {"id:bigint", "note:text", "qty:integer"};
    static const char *const key_renamed[] = {"ident:integer", "note:text", "qty:integer"};
    static const char *const upper[] = {"id:INTEGER", "note:TEXT", "qty:INTEGER"};
    struct {
        const char *const *cols;
        size_t n;
        const size_t *key;
        size_t nkey;
        sqlq_table_change want;
        const char *text;
    } cases[] = {
        {base, 3, k0, 1, SQLQ_TABLE_SAME, "reordered"},
        {upper, 3, k0, 1, SQLQ_TABLE_SAME, "reordered"},
        {added, 4, k0, 1, SQLQ_TABLE_COLUMNS_CHANGED, "added=extra"},
        {base, 2, k0, 1, SQLQ_TABLE_COLUMNS_CHANGED, "dropped=qty"},
        {renamed, 3, k0, 1, SQLQ_TABLE_COLUMNS_CHANGED, "added=quantity dropped=qty"},
        {retyped, 3, k0, 1, SQLQ_TABLE_COLUMNS_CHANGED, "retyped=qty"},
        {key_retyped, 3, k0, 1, SQLQ_TABLE_KEY_CHANGED, "retyped=id"},
        {key_renamed, 3, k0, 1, SQLQ_TABLE_KEY_CHANGED, "added=ident dropped=id"},
        {base, 3, k1, 1, SQLQ_TABLE_KEY_CHANGED, "reordered"},
        {base, 3, k01, 2, SQLQ_TABLE_KEY_CHANGED, "reordered"},
    };
    shape was;
    make(&was, base, 3, k0, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shape now;
        make(&now, cases[i].cols, cases[i].n, cases[i].key, cases[i].nkey);
        if (sqlq_table_compare(&was.t, &now.t) != cases[i].want)
            fail_msg("case %zu: compare gave %d, expected %d", i,
                     (int)sqlq_table_compare(&was.t, &now.t), (int)cases[i].want);
        char text[200];
        sqlq_table_change_text(&was.t, &now.t, text, sizeof(text));
        assert_string_equal(text, cases[i].text);
        drop(&now);
    }
    char key[64];
    shape two;
    make(&two, base, 3, k01, 2);
    sqlq_table_key_text(&two.t, key, sizeof(key));
    assert_string_equal(key, "id integer, note text");
    char tiny[8];
    sqlq_table_key_text(&two.t, tiny, sizeof(tiny)); /* cut, still terminated */
    assert_string_equal(tiny, "id inte");
    drop(&two);
    drop(&was);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_shape_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
