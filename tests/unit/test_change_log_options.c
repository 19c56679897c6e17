/* sql/change_log_options: the pieces the capture triggers' upsert of the log row gets when
 * `sqlq setup --track-columns` / `--before-image` asked for them, per change-log database, and
 * nothing at all without them (the default trigger stays as it is). Pure text: no database. */
#include "change_log_options.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* t(id PK, name, doc) with doc's type as given. */
typedef struct fixture {
    char doc_type[16];
    sqlq_column cols[3];
    size_t key[1];
    sqlq_table t;
} fixture;

static void make(fixture *f, const char *doc_type)
{
    memset(f, 0, sizeof(*f));
    f->cols[0] = (sqlq_column){.name = "id", .type = "integer", .in_key = true, .key_pos = 1};
    f->cols[1] = (sqlq_column){.name = "name", .type = "text"};
    snprintf(f->doc_type, sizeof(f->doc_type), "%s", doc_type);
    f->cols[2] = (sqlq_column){.name = "doc", .type = f->doc_type};
    f->t = (sqlq_table){.columns = f->cols, .ncolumns = 3, .key = f->key, .nkey = 1};
}

/* names, values and updates of one op as one text: "<names>|<values>|<updates>". */
static char *pieces(const sqlq_dialect *d, const sqlq_table *t, const sqlq_change_log_options *o,
                    char op, const char *version)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_change_log_options_names(&q, t, o);
    sqlq_sql_text_add(&q, "|");
    sqlq_change_log_options_values(&q, t, o, op, version);
    sqlq_sql_text_add(&q, "|");
    sqlq_change_log_options_updates(&q, t, o, op, "log_t");
    char *out = NULL;
    assert_int_equal(sqlq_sql_text_take(&q, &out, NULL), SQLQ_OK);
    return out;
}

static void contains(const char *sql, const char *part)
{
    if (!sql || !strstr(sql, part)) /* (GCC's format check sees a NULL sql through inlining) */
        fail_msg("expected\n  %s\nin\n  %s", part, sql ? sql : "(no SQL)");
}

static void test_change_log_options_none_adds_nothing(void **state)
{
    (void)state;
    fixture f;
    make(&f, "json");
    sqlq_change_log_options none = {false, false};
    const sqlq_dialect *const ds[] = {&sqlq_dialect_sqlite, &sqlq_dialect_postgres,
                                      &sqlq_dialect_mariadb};
    for (size_t i = 0; i < 3; i++)
        for (const char *op = "IUD"; *op; op++) {
            char *s = pieces(ds[i], &f.t, &none, *op, i == 2 ? NULL : "v");
            assert_string_equal(s, "||");
            free(s);
        }
}

static void test_change_log_options_postgres(void **state)
{
    (void)state;
    fixture f;
    make(&f, "json");
    sqlq_change_log_options both = {true, true};
    char *u = pieces(&sqlq_dialect_postgres, &f.t, &both, 'U', "sqlq_new_version");
    contains(u, ", sqlq_changed, \"sqlq_b_id\", \"sqlq_b_name\", \"sqlq_b_doc\"|");
    contains(u, "CASE WHEN OLD.\"name\" IS DISTINCT FROM NEW.\"name\" THEN");
    /* json has no equality: compared as text */
    contains(u, "CAST(OLD.\"doc\" AS text) IS DISTINCT FROM CAST(NEW.\"doc\" AS text)");
    contains(u, "jsonb_build_object('doc', sqlq_new_version)");
    contains(u, ", OLD.\"id\", OLD.\"name\", OLD.\"doc\"|");
    contains(u, "sqlq_changed = CASE WHEN \"log_t\".sqlq_changed IS NULL THEN NULL ELSE "
                "\"log_t\".sqlq_changed || excluded.sqlq_changed END");
    contains(u, ", \"sqlq_b_doc\" = excluded.\"sqlq_b_doc\"");
    free(u);
    char *i = pieces(&sqlq_dialect_postgres, &f.t, &both, 'I', "v");
    contains(i, "|, '{}', NULL, NULL, NULL|, \"sqlq_changed\" = excluded.\"sqlq_changed\"");
    free(i);
    char *d = pieces(&sqlq_dialect_postgres, &f.t, &both, 'D', "v");
    contains(d, "|, NULL, OLD.\"id\", OLD.\"name\", OLD.\"doc\"|");
    assert_null(strstr(d, "sqlq_changed\" ="));
    assert_null(strstr(d, "sqlq_changed ="));
    free(d);
}

static void test_change_log_options_sqlite_and_mariadb(void **state)
{
    (void)state;
    fixture f;
    make(&f, "text");
    sqlq_change_log_options track = {true, false};
    char *s = pieces(&sqlq_dialect_sqlite, &f.t, &track, 'U', "V");
    contains(s, "json_patch(json_patch(json_patch('{}', CASE WHEN OLD.\"id\" IS NOT NEW.\"id\" "
                "THEN json_object('id', V) ELSE '{}' END)");
    contains(s, "sqlq_changed = CASE WHEN sqlq_changed IS NULL THEN NULL ELSE "
                "json_patch(sqlq_changed, excluded.sqlq_changed) END");
    assert_null(strstr(s, "sqlq_b_"));
    free(s);
    /* MariaDB/MySQL: 0 until stamped; its assignments come first and end with ", " */
    char *m = pieces(&sqlq_dialect_mariadb, &f.t, &track, 'U', NULL);
    contains(m, "NOT (OLD.`name` <=> NEW.`name`) THEN json_object('name', 0)");
    contains(m, "|sqlq_changed = IF(sqlq_changed IS NULL, NULL, JSON_MERGE_PATCH(IF(sqlq_version = "
                "0, sqlq_changed, JSON_REPLACE(sqlq_changed, '$.\"id\"', IF(JSON_EXTRACT(");
    contains(m, "VALUES(sqlq_changed))), ");
    free(m);
}

static void test_change_log_options_mirror_names(void **state)
{
    (void)state;
    char out[128];
    assert_true(sqlq_change_log_options_mirror_name("total", out, sizeof(out)));
    assert_string_equal(out, "sqlq_b_total");
    char long_name[64];
    memset(long_name, 'x', 57);
    long_name[57] = '\0';
    assert_false(sqlq_change_log_options_mirror_name(long_name, out, sizeof(out)));
    long_name[56] = '\0';
    assert_true(sqlq_change_log_options_mirror_name(long_name, out, sizeof(out)));
    sqlq_column lc[3] = {{.name = "id", .in_key = true}, {.name = "sqlq_changed"},
                         {.name = "sqlq_b_total"}};
    sqlq_table log = {.columns = lc, .ncolumns = 3};
    sqlq_change_log_options o;
    sqlq_change_log_options_of(&log, &o);
    assert_true(o.track_columns);
    assert_true(o.before_image);
    assert_true(sqlq_change_log_options_mirrors(&log, "total"));
    assert_false(sqlq_change_log_options_mirrors(&log, "id"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_change_log_options_none_adds_nothing),
        cmocka_unit_test(test_change_log_options_postgres),
        cmocka_unit_test(test_change_log_options_sqlite_and_mariadb),
        cmocka_unit_test(test_change_log_options_mirror_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
