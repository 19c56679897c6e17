/* capture_sql_shape: the statements that read the watched table's shape from the catalog:
 * the key as a poll's m_key column and, with the change source's objects, as a statement of
 * its own (capture_shape.c compares them with what the capture opened with). */
#include "capture_sql.h"

#include "capture_sql_builder.h"
#include "change_log_stamped.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The user table's canonical name as a string literal ('"public"."items"'; SQLite: 'items'),
 * for the catalog lookups of key_shape. */
static void table_literal(builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    if (b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER) {
        sqlq_sql_text_literal(&b->t, n->name);
        sqlq_sql_text_add(&b->t, ", ");
        sqlq_sql_text_literal(&b->t, n->schema[0] ? n->schema : "main");
        return;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, b->c->dialect);
    sqlq_sql_text_table(&q, n);
    char *quoted = NULL;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_sql_text_take(&q, &quoted, &e) != SQLQ_OK) {
        b->t.rc = b->t.rc ? b->t.rc : e.code;
        return;
    }
    sqlq_sql_text_literal(&b->t, quoted);
    free(quoted);
}

/* The key_shape of a key that is a unique index (--key-columns, table_key.h): that index's
 * columns as the catalog has them now, NULL when it is gone or no longer unique on plain
 * columns; the same forms as the primary key's below, and a key column that became nullable
 * changes it too (PostgreSQL: NULL; elsewhere " null" after the column). */
static void unique_key_shape(builder *b)
{
    const sqlq_table_name *n = &b->c->table->name;
    const char *ix = b->c->table->key_index;
    if (is_pg(b)) {
        sqlq_table_name in = *n; /* an index lives in its table's schema */
        snprintf(in.name, sizeof(in.name), "%s", ix);
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, b->c->dialect);
        sqlq_sql_text_table(&q, &in);
        char *quoted = NULL;
        sqlq_error e;
        sqlq_error_clear(&e);
        if (sqlq_sql_text_take(&q, &quoted, &e) != SQLQ_OK) {
            b->t.rc = b->t.rc ? b->t.rc : e.code;
            return;
        }
        sqlq_sql_text_add(&b->t, "(SELECT CAST(i.indkey AS text) || ' ' || CAST(i.indclass AS "
                                 "text) FROM pg_catalog.pg_index i WHERE i.indexrelid = "
                                 "to_regclass(CAST(");
        sqlq_sql_text_literal(&b->t, quoted);
        free(quoted);
        sqlq_sql_text_add(&b->t, " AS text)) AND i.indrelid = CAST(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, " AS regclass) AND i.indisunique AND i.indpred IS NULL AND "
                                 "i.indexprs IS NULL AND NOT EXISTS (SELECT 1 FROM "
                                 "pg_catalog.pg_attribute a WHERE a.attrelid = i.indrelid AND "
                                 "a.attnum = ANY ((CAST(i.indkey AS int2[]))[0:i.indnkeyatts - 1]) "
                                 "AND NOT a.attnotnull))");
    } else if (is_my(b)) {
        sqlq_sql_text_add(&b->t, "(SELECT GROUP_CONCAT(CONCAT(s.column_name, ' ', c.column_type, "
                                 "IF(c.is_nullable = 'YES', ' null', '')) "
                                 "ORDER BY s.seq_in_index SEPARATOR ', ') FROM "
                                 "information_schema.statistics s JOIN information_schema.columns "
                                 "c ON c.column_name = s.column_name AND c.table_schema = ");
        sqlq_sql_text_literal(&b->t, n->schema);
        sqlq_sql_text_add(&b->t, " AND c.table_name = ");
        sqlq_sql_text_literal(&b->t, n->name);
        sqlq_sql_text_add(&b->t, " WHERE s.non_unique = 0 AND s.index_name = ");
        sqlq_sql_text_literal(&b->t, ix);
        sqlq_sql_text_add(&b->t, " AND s.table_schema = ");
        sqlq_sql_text_literal(&b->t, n->schema);
        sqlq_sql_text_add(&b->t, " AND s.table_name = ");
        sqlq_sql_text_literal(&b->t, n->name);
        sqlq_sql_text_add(&b->t, ")");
    } else { /* SQLite (SQL Server has no unique-index keys) */
        sqlq_sql_text_add(&b->t, "(SELECT group_concat(k, ', ') FROM (SELECT ti.name || ' ' || "
                                 "ti.type || CASE WHEN ti.\"notnull\" THEN '' ELSE ' null' END AS "
                                 "k FROM pragma_index_list(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, ") il JOIN pragma_index_info(il.name, ");
        sqlq_sql_text_literal(&b->t, n->schema[0] ? n->schema : "main");
        sqlq_sql_text_add(&b->t, ") ii JOIN pragma_table_info(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, ") ti ON ti.cid = ii.cid WHERE il.\"unique\" = 1 AND "
                                 "il.partial = 0 AND il.name = ");
        sqlq_sql_text_literal(&b->t, ix);
        sqlq_sql_text_add(&b->t, " ORDER BY ii.seqno))");
    }
}

/* A scalar subquery: the table's primary key as the catalog has it now (SQLite, SQL Server:
 * "name type, …" in key order; PostgreSQL: column numbers and operator classes), NULL when it
 * has none. Compared with the value read when the
 * capture opened: a key that changed (other columns, a renamed or retyped key column) makes
 * the change log's keys mean something else. Uncorrelated: computed once per statement. */
void sqlq_capture_sql_key_shape_expr(builder *b)
{
    if (b->c->table->key_index) {
        unique_key_shape(b);
        return;
    }
    if (is_pg(b)) {
        /* The key's column numbers and operator classes (a type of another family has
         * another): one row of pg_index. Joined with pg_attribute for names and types it cost
         * 0.3 ms of planning per poll; a renamed key column fails the poll's join instead, and
         * a retyped one changes the row's column types (capture_shape.c). */
        sqlq_sql_text_add(&b->t, "(SELECT CAST(i.indkey AS text) || ' ' || CAST(i.indclass AS "
                                 "text) FROM pg_catalog.pg_index i WHERE i.indrelid = CAST(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, " AS regclass) AND i.indisprimary)");
    } else if (is_my(b)) {
        /* Schema and table as constants on both information_schema tables: MariaDB then
         * opens only this table's definition (joined on them, it read every table's: 100 ms
         * a poll on a server with a few databases). */
        sqlq_sql_text_add(&b->t, "(SELECT GROUP_CONCAT(CONCAT(k.column_name, ' ', c.column_type) "
                                 "ORDER BY k.ordinal_position SEPARATOR ', ') FROM "
                                 "information_schema.key_column_usage k JOIN "
                                 "information_schema.columns c ON c.column_name = k.column_name "
                                 "AND c.table_schema = ");
        sqlq_sql_text_literal(&b->t, b->c->table->name.schema);
        sqlq_sql_text_add(&b->t, " AND c.table_name = ");
        sqlq_sql_text_literal(&b->t, b->c->table->name.name);
        sqlq_sql_text_add(&b->t, " WHERE k.constraint_name = 'PRIMARY' AND k.table_schema = ");
        sqlq_sql_text_literal(&b->t, b->c->table->name.schema);
        sqlq_sql_text_add(&b->t, " AND k.table_name = ");
        sqlq_sql_text_literal(&b->t, b->c->table->name.name);
        sqlq_sql_text_add(&b->t, ")");
    } else if (is_ms(b)) {
        sqlq_sql_text_add(&b->t, "(SELECT STUFF((SELECT ', ' + c.name + ' ' + TYPE_NAME("
                                 "c.user_type_id) + '(' + CAST(c.max_length AS varchar(10)) + ',' + "
                                 "CAST(c.precision AS varchar(10)) + ',' + CAST(c.scale AS "
                                 "varchar(10)) + ')' FROM sys.indexes i JOIN sys.index_columns ic ON "
                                 "ic.object_id = i.object_id AND ic.index_id = i.index_id JOIN "
                                 "sys.columns c ON c.object_id = ic.object_id AND c.column_id = "
                                 "ic.column_id WHERE i.object_id = OBJECT_ID(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, ") AND i.is_primary_key = 1 ORDER BY ic.key_ordinal FOR XML "
                                 "PATH('')), 1, 2, ''))");
    } else {
        sqlq_sql_text_add(&b->t, "(SELECT group_concat(name || ' ' || type, ', ') FROM (SELECT "
                                 "name, type FROM pragma_table_info(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, ") WHERE pk > 0 ORDER BY pk))");
    }
}

/* A scalar subquery: how many of the objects that feed the change source exist and are
 * enabled (sqlq_capture_sql_source_objects). A table created again (SQLite's way to change a
 * column's type) loses its triggers, and its changes would go unseen. */
static void source_objects(builder *b)
{
    if (is_ms(b)) {
        sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM sys.change_tracking_tables WHERE "
                                 "object_id = OBJECT_ID(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, "))");
    } else if (is_my(b)) {
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
    } else if (is_pg(b)) {
        sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = "
                                 "to_regclass(CAST(");
        table_literal(b);
        sqlq_sql_text_add(&b->t, " AS text)) AND tgname = ");
        sqlq_sql_text_literal(&b->t, b->c->names->trigger);
        sqlq_sql_text_add(&b->t, " AND tgenabled <> 'D')");
    } else {
        sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND "
                                 "tbl_name = ");
        sqlq_sql_text_literal(&b->t, b->c->table->name.name);
        sqlq_sql_text_add(&b->t, " AND substr(name, 1, %zu) = ", strlen(b->c->names->trigger));
        sqlq_sql_text_literal(&b->t, b->c->names->trigger);
        sqlq_sql_text_add(&b->t, ")");
    }
}

int sqlq_capture_sql_source_objects(const sqlq_capture_sql *c)
{
    if (c->dialect->capture_shape == SQLQ_CAPTURE_LOG_STAMPED)
        return 3;
    return c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER ? 4 : 1;
}

sqlq_result sqlq_capture_sql_key_shape(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (is_pg(&b)) /* sent as it is: see direct() in capture_sql.c */
        sqlq_sql_text_add(&b.t, "/* sqlq */ ");
    sqlq_sql_text_add(&b.t, "SELECT ");
    sqlq_capture_sql_key_shape_expr(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_KEY_SHAPE ", ");
    source_objects(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_SOURCE_OBJECTS);
    return b_done(&b, err);
}

