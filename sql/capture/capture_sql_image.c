/* capture_sql_image: the poll's columns for a route that asks for changed columns or the
 * before image (change_log_options.h): read from the log row c in the batch select, so they
 * travel with b.* and are read by name, before m_key. */
#include "capture_sql_builder.h"
#include "change_log_options.h"
#include "row_json.h"

#include <stdio.h>
#include <stdlib.h>

/* What this bridge delivered of the key: a released lease at a newer version than its sync
 * version, else the sync version (the same rule op_column uses for the operation). */
static void delivered(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, ", CASE WHEN l." SQLQ_COL_EXPIRES " IS NULL AND l." SQLQ_COL_VERSION
                             " > ");
    sqlq_cb_sync_value(b);
    sqlq_sql_text_add(&b->t, " THEN l." SQLQ_COL_VERSION " ELSE ");
    sqlq_cb_sync_value(b);
    sqlq_sql_text_add(&b->t, " END AS " SQLQ_CAPTURE_DELIVERED);
}

/* The before-image columns the log has, as m_b<i> for column i, and after each that needs
 * it the exact form (row_json.h) as m_bf<i>: the same encoder as the row's. */
static void before_columns(sqlq_capture_builder *b)
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

void sqlq_capture_sql_image_columns(sqlq_capture_builder *b)
{
    if (sqlq_cb_log(b)->tracked) {
        if (b->c->changed && sqlq_cb_log(b)->changed_columns)
            sqlq_cb_log(b)->changed_columns(b);
        return;
    }
    if (b->c->changed) {
        sqlq_sql_text_add(&b->t, ", c." SQLQ_COL_CHANGED " AS " SQLQ_CAPTURE_CHANGED);
        delivered(b);
    }
    if (b->c->before)
        before_columns(b);
}
