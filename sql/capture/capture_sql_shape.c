/* capture_sql_shape: the statements that read the watched table's shape from the catalog:
 * the key as a poll's m_key column and, with the change source's objects, as a statement of
 * its own (capture_shape.c compares them with what the capture opened with). */
#include "capture_sql.h"

#include "capture_sql_builder.h"

void sqlq_capture_sql_key_shape_expr(sqlq_capture_builder *b)
{
    const sqlq_capture_log_sql *s = sqlq_cb_log(b);
    if (b->c->table->key_index && s->unique_key_shape)
        s->unique_key_shape(b);
    else
        s->key_shape(b);
}

int sqlq_capture_sql_source_objects(const sqlq_capture_sql *c)
{
    return c->log_sql->source_objects;
}

sqlq_result sqlq_capture_sql_key_shape(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT ");
    sqlq_capture_sql_key_shape_expr(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_KEY_SHAPE ", ");
    c->log_sql->source_objects_expr(&b);
    sqlq_sql_text_add(&b.t, " AS " SQLQ_CAPTURE_SOURCE_OBJECTS);
    return sqlq_cb_done(&b, err);
}

