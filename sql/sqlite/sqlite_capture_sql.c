/* sqlite_capture_sql: the SQL of SQLite's counter log as the shared capture builder writes it
 * (capture_sql.h): a serial writer, so no lock and no horizon; the current time and lease
 * tokens come from the bridge (its two poll statements agree on them). */
#include "sqlite_internal.h"

#include "capture_sql_builder.h"

#include <string.h>

static void tokens_in(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "IN (SELECT value FROM json_each(");
    sqlq_cb_param(b, SQLQ_P_TOKENS);
    sqlq_sql_text_add(&b->t, "))");
}

/* Delete what every bridge of the table passed, but the newest row: the triggers take the
 * next version above it. */
static sqlq_result trim_log(sqlq_capture_builder *b, sqlq_error *err)
{
    const char *log = b->c->names->log_table;
    sqlq_sql_text_add(&b->t, "DELETE FROM ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sqlq_cb_passed(b);
    sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_VERSION " < (SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, ")");
    return sqlq_cb_done(b, err);
}

/* The log's newest version (the triggers take the next one above it or above their floor; an
 * empty log has nothing to skip). */
static void start_now(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "SELECT coalesce(max(" SQLQ_COL_VERSION "), 0) FROM ");
    sqlq_cb_obj(b, b->c->names->log_table);
}

/* The table's name and schema as two literals, the arguments of the pragma functions. */
static void table_args(sqlq_capture_builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    sqlq_sql_text_literal(&b->t, n->name);
    sqlq_sql_text_add(&b->t, ", ");
    sqlq_sql_text_literal(&b->t, n->schema[0] ? n->schema : "main");
}

/* "name type, …" in key order. */
static void key_expr(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT group_concat(name || ' ' || type, ', ') FROM (SELECT "
                             "name, type FROM pragma_table_info(");
    table_args(b);
    sqlq_sql_text_add(&b->t, ") WHERE pk > 0 ORDER BY pk))");
}

/* The unique index's columns, " null" after a nullable one. */
static void unique_key_expr(sqlq_capture_builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    sqlq_sql_text_add(&b->t, "(SELECT group_concat(k, ', ') FROM (SELECT ti.name || ' ' || "
                             "ti.type || CASE WHEN ti.\"notnull\" THEN '' ELSE ' null' END AS "
                             "k FROM pragma_index_list(");
    table_args(b);
    sqlq_sql_text_add(&b->t, ") il JOIN pragma_index_info(il.name, ");
    sqlq_sql_text_literal(&b->t, n->schema[0] ? n->schema : "main");
    sqlq_sql_text_add(&b->t, ") ii JOIN pragma_table_info(");
    table_args(b);
    sqlq_sql_text_add(&b->t, ") ti ON ti.cid = ii.cid WHERE il.\"unique\" = 1 AND "
                             "il.partial = 0 AND il.name = ");
    sqlq_sql_text_literal(&b->t, b->c->table->key_index);
    sqlq_sql_text_add(&b->t, " ORDER BY ii.seqno))");
}

/* sqlq's 4 triggers on the table. */
static void source_objects(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND "
                             "tbl_name = ");
    sqlq_sql_text_literal(&b->t, b->c->table->name.name);
    sqlq_sql_text_add(&b->t, " AND substr(name, 1, %zu) = ", strlen(b->c->names->trigger));
    sqlq_sql_text_literal(&b->t, b->c->names->trigger);
    sqlq_sql_text_add(&b->t, ")");
}

const sqlq_capture_log_sql sqlq_sqlite_log_sql = {
    .version_col = "c." SQLQ_COL_VERSION,
    .op_col = "c." SQLQ_COL_OP,
    .resume_max = true,
    .now_param = true,
    .reserve_tokens = true,
    .direct = "",
    .count_all = "count(*)",
    .source_objects = 4,
    .trim_log = trim_log,
    .tokens_in = tokens_in,
    .start_now = start_now,
    .key_expr = key_expr,
    .unique_key_expr = unique_key_expr,
    .source_objects_expr = source_objects,
};
