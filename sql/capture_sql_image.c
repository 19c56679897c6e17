/* capture_sql_image: the poll's columns for a route that asks for changed columns or the
 * before image (change_log_options.h): read from the log row c in the batch select, so they
 * travel with b.* and are read by name, before m_key. */
#include "capture_sql_builder.h"
#include "change_log_options.h"
#include "row_json.h"

#include <stdio.h>
#include <stdlib.h>

/* The stored sync version: PostgreSQL's poll has it as a parameter, the others a subquery. */
static void sync_value(builder *b)
{
    if (is_pg(b))
        param(b, SQLQ_P_SYNC);
    else
        sync_subquery(b);
}

/* What this bridge delivered of the key: a released lease at a newer version than its sync
 * version, else the sync version (the same rule op_column uses for the operation). */
static void delivered(builder *b)
{
    sqlq_sql_text_add(&b->t, ", CASE WHEN l." SQLQ_COL_EXPIRES " IS NULL AND l." SQLQ_COL_VERSION
                             " > ");
    sync_value(b);
    sqlq_sql_text_add(&b->t, " THEN l." SQLQ_COL_VERSION " ELSE ");
    sync_value(b);
    sqlq_sql_text_add(&b->t, " END AS " SQLQ_CAPTURE_DELIVERED);
}

/* The before-image columns the log has, as m_b<i> for column i, and after each that needs
 * it the exact form (row_json.h) as m_bf<i>: the same encoder as the row's. */
static void before_columns(builder *b)
{
    const sqlq_table *t = b->c->table;
    for (size_t i = 0; i < t->ncolumns; i++) {
        char name[128];
        if (!sqlq_change_log_options_mirrors(b->c->log, t->columns[i].name) ||
            !sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name)))
            continue;
        sqlq_sql_text_col(&b->t, ", c.", name);
        sqlq_sql_text_add(&b->t, " AS " SQLQ_CAPTURE_BEFORE "%zu", i);
        sqlq_column mirror = t->columns[i];
        mirror.name = name;
        if (!sqlq_row_json_needs_fixup(b->t.dialect, &mirror))
            continue;
        sqlq_sql_text_add(&b->t, ", ");
        if (b->t.rc == SQLQ_OK)
            b->t.rc = sqlq_row_json_fixup_sql(b->t.dialect, "c.", &mirror, &b->t.buf);
        sqlq_sql_text_add(&b->t, " AS " SQLQ_CAPTURE_BEFORE_FIX "%zu", i);
    }
}

/* SQL Server change tracking (TRACK_COLUMNS_UPDATED = ON): m_call 1 when SYS_CHANGE_COLUMNS is
 * NULL (every column: an update of them all, or an insert), else per column whether its bit
 * is in the mask, as m_c<i>. The mask covers every change since the sync version. */
static void ct_changed_columns(builder *b)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text quoted;
    sqlq_sql_text_init(&quoted, b->t.dialect);
    sqlq_sql_text_table(&quoted, &t->name);
    char *name = NULL;
    if (sqlq_sql_text_take(&quoted, &name, NULL) != SQLQ_OK) {
        b->t.rc = b->t.rc ? b->t.rc : SQLQ_E_NOMEM;
        return;
    }
    sqlq_sql_text_add(&b->t, ", CASE WHEN c.SYS_CHANGE_COLUMNS IS NULL THEN 1 ELSE 0 END AS "
                             SQLQ_CAPTURE_CT_ALL);
    for (size_t i = 0; i < t->ncolumns; i++) {
        sqlq_sql_text_add(&b->t, ", CAST(CHANGE_TRACKING_IS_COLUMN_IN_MASK(COLUMNPROPERTY(OBJECT_ID(");
        sqlq_sql_text_literal(&b->t, name);
        sqlq_sql_text_add(&b->t, "), ");
        sqlq_sql_text_literal(&b->t, t->columns[i].name);
        sqlq_sql_text_add(&b->t, ", 'ColumnId'), c.SYS_CHANGE_COLUMNS) AS int) AS "
                                 SQLQ_CAPTURE_CT_COLUMN "%zu", i);
    }
    free(name);
}

void sqlq_capture_sql_image_columns(builder *b)
{
    if (b->c->change_tracking && b->c->changed)
        ct_changed_columns(b);
    if (b->c->change_tracking)
        return;
    if (b->c->changed) {
        sqlq_sql_text_add(&b->t, ", c." SQLQ_COL_CHANGED " AS " SQLQ_CAPTURE_CHANGED);
        delivered(b);
    }
    if (b->c->before)
        before_columns(b);
}
