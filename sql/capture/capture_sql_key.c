/* capture_sql_key: the statements that read the watched table's key from the catalog: the key
 * as a poll's m_key column and, with the change source's objects, as the key statement of
 * its own (capture_table_shape.c compares them with what the capture opened with). */
#include "capture_sql.h"

#include "capture_sql_builder.h"

void sqlq_capture_sql_key_expr(sqlq_capture_builder *b)
{
    const sqlq_capture_log_sql *s = sqlq_cb_log(b);
    if (b->c->table->key_index && s->unique_key_expr)
        s->unique_key_expr(b);
    else
        s->key_expr(b);
}

int sqlq_capture_sql_source_objects(const sqlq_capture_sql *c)
{
    return c->log_sql->source_objects;
}

sqlq_result sqlq_capture_sql_key_stmt(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT ");
    sqlq_capture_sql_key_expr(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_KEY_NOW ", ");
    c->log_sql->source_objects_expr(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_SOURCE_OBJECTS);
    return sqlq_cb_done(&b, err);
}

