/* mariadb_capture_sql: the SQL of the MariaDB/MySQL stamped log as the shared capture builder
 * writes it (capture_sql.h): rows are stamped with their version before a poll reads them
 * (mariadb_change_log.h), lease tokens come from the counter table, upserts are ON DUPLICATE
 * KEY UPDATE. */
#include "mariadb_internal.h"

#include "capture_sql_builder.h"
#include "mariadb_change_log.h"

/* This bridge's state row: one poll per bridge and table at a time; and the version counter's
 * row: no stamp commits between the poll's read and its leases (both read the same stamped
 * rows). Stamps wait for the poll, a short transaction. */
static sqlq_result lock(sqlq_capture_builder *b, sqlq_error *err)
{
    sqlq_sql_text_add(&b->t, "SELECT s.sync_version, k.value FROM ");
    sqlq_cb_obj(b, "state");
    sqlq_sql_text_add(&b->t, " AS s, ");
    sqlq_cb_obj(b, "counter");
    sqlq_sql_text_add(&b->t, " AS k WHERE s.bridge_name = ");
    sqlq_cb_param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, " AND s.table_name = ");
    sqlq_cb_param(b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b->t, " AND k.name = 'version' FOR UPDATE");
    return sqlq_cb_done(b, err);
}

static void tokens_in(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "IN (SELECT j.v FROM JSON_TABLE(");
    sqlq_cb_param(b, SQLQ_P_TOKENS);
    sqlq_sql_text_add(&b->t, ", '$[*]' COLUMNS (v bigint PATH '$')) AS j)");
}

/* Stamped rows only (0: not stamped yet), and none a user transaction holds: the same derived
 * table of SKIP LOCKED keys as the stamp (mariadb_change_log.c). */
static sqlq_result trim_log(sqlq_capture_builder *b, sqlq_error *err)
{
    const char *log = b->c->names->log_table;
    sqlq_sql_text_add(&b->t, "DELETE l FROM (SELECT ");
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, " FROM ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, " WHERE " SQLQ_COL_VERSION " > 0 AND ");
    sqlq_cb_passed(b);
    sqlq_sql_text_add(&b->t, " FOR UPDATE SKIP LOCKED) p STRAIGHT_JOIN ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, " l FORCE INDEX (PRIMARY) ON ");
    sqlq_cb_key_match(b, "l.", "p.", false);
    return sqlq_cb_done(b, err);
}

/* The version counter: every row stamped so far is "before now". */
static void start_now(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "SELECT value FROM ");
    sqlq_cb_obj(b, "counter");
    sqlq_sql_text_add(&b->t, " WHERE name = 'version'");
}

/* Schema and table as constants on both information_schema tables: MariaDB then opens only
 * this table's definition (joined on them, it read every table's: 100 ms a poll on a server
 * with a few databases). "name type, …" in key order. */
static void key_expr(sqlq_capture_builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    sqlq_sql_text_add(&b->t, "(SELECT GROUP_CONCAT(CONCAT(k.column_name, ' ', c.column_type) "
                             "ORDER BY k.ordinal_position SEPARATOR ', ') FROM "
                             "information_schema.key_column_usage k JOIN "
                             "information_schema.columns c ON c.column_name = k.column_name "
                             "AND c.table_schema = ");
    sqlq_sql_text_literal(&b->t, n->schema);
    sqlq_sql_text_add(&b->t, " AND c.table_name = ");
    sqlq_sql_text_literal(&b->t, n->name);
    sqlq_sql_text_add(&b->t, " WHERE k.constraint_name = 'PRIMARY' AND k.table_schema = ");
    sqlq_sql_text_literal(&b->t, n->schema);
    sqlq_sql_text_add(&b->t, " AND k.table_name = ");
    sqlq_sql_text_literal(&b->t, n->name);
    sqlq_sql_text_add(&b->t, ")");
}

/* The unique index's columns, " null" after a nullable one. */
static void unique_key_expr(sqlq_capture_builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    sqlq_sql_text_add(&b->t, "(SELECT GROUP_CONCAT(CONCAT(s.column_name, ' ', c.column_type, "
                             "IF(c.is_nullable = 'YES', ' null', '')) "
                             "ORDER BY s.seq_in_index SEPARATOR ', ') FROM "
                             "information_schema.statistics s JOIN information_schema.columns "
                             "c ON c.column_name = s.column_name AND c.table_schema = ");
    sqlq_sql_text_literal(&b->t, n->schema);
    sqlq_sql_text_add(&b->t, " AND c.table_name = ");
    sqlq_sql_text_literal(&b->t, n->name);
    sqlq_sql_text_add(&b->t, " WHERE s.non_unique = 0 AND s.index_name = ");
    sqlq_sql_text_literal(&b->t, b->c->table->key_index);
    sqlq_sql_text_add(&b->t, " AND s.table_schema = ");
    sqlq_sql_text_literal(&b->t, n->schema);
    sqlq_sql_text_add(&b->t, " AND s.table_name = ");
    sqlq_sql_text_literal(&b->t, n->name);
    sqlq_sql_text_add(&b->t, ")");
}

/* sqlq's 3 triggers on the table. */
static void source_objects(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM information_schema.triggers WHERE "
                             "event_object_schema = ");
    sqlq_sql_text_literal(&b->t, b->c->table->name.schema);
    sqlq_sql_text_add(&b->t, " AND event_object_table = ");
    sqlq_sql_text_literal(&b->t, b->c->table->name.name);
    for (int i = 0; i < 3; i++) {
        char name[96];
        sqlq_change_log_stamped_trigger(b->c->names, i, name, sizeof(name));
        sqlq_sql_text_add(&b->t, "%s", i ? ", " : " AND trigger_name IN (");
        sqlq_sql_text_literal(&b->t, name);
    }
    sqlq_sql_text_add(&b->t, "))");
}

const sqlq_capture_log_sql sqlq_mariadb_log_sql = {
    .version_col = "c." SQLQ_COL_VERSION,
    .op_col = "c." SQLQ_COL_OP,
    .reserve_tokens = true,
    .tokens_outside = true,
    .on_duplicate_key = true,
    .unstamped = true,
    .direct = "",
    .count_all = "count(*)",
    .source_objects = 3,
    .lock = lock,
    .trim_log = trim_log,
    .tokens_in = tokens_in,
    .start_now = start_now,
    .key_expr = key_expr,
    .unique_key_expr = unique_key_expr,
    .source_objects_expr = source_objects,
};
