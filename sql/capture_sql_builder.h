/* capture_sql_builder: helpers shared by capture_sql.c (change statements) and
 * capture_sql_state.c (state and leases statements): a statement under construction with the
 * role of each `?`. Internal to sql/. */
#ifndef SQLQ_CAPTURE_SQL_BUILDER_H
#define SQLQ_CAPTURE_SQL_BUILDER_H

#include "capture_sql.h"
#include "sql_text.h"

#include <stdlib.h>
#include <string.h>

/* A statement under construction: text plus the role of each `?`. */
typedef struct builder {
    sqlq_sql_text t;
    sqlq_capture_stmt *st;
    const sqlq_capture_sql *c;
    bool resume; /* poll: only changes after the resume position (sqlq_capture_sql_poll_resume) */
} builder;

static inline void b_init(builder *b, const sqlq_capture_sql *c, sqlq_capture_stmt *st)
{
    memset(st, 0, sizeof(*st));
    sqlq_sql_text_init(&b->t, c->dialect);
    b->st = st;
    b->c = c;
    b->resume = false;
}

static inline sqlq_result b_done(builder *b, sqlq_error *err)
{
    return sqlq_sql_text_take(&b->t, &b->st->sql, err);
}

static inline void param(builder *b, sqlq_capture_param p)
{
    if (b->st->nparams >= SQLQ_CAPTURE_MAX_PARAMS) {
        b->t.rc = b->t.rc ? b->t.rc : SQLQ_E_INVALID;
        return;
    }
    b->st->params[b->st->nparams++] = p;
    sqlq_sql_text_add(&b->t, "?");
}

static inline bool is_pg(const builder *b)
{
    return b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_SEQUENCE;
}
/* MariaDB/MySQL: the stamped change log (change_log_stamped.h). */
static inline bool is_my(const builder *b)
{
    return b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_STAMPED;
}
static inline bool is_ms(const builder *b)
{
    return b->c->dialect->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING;
}
/* The current time in ms. SQLite: a parameter the caller fills from its own clock (the
 * database file is local: same clock), so the two statements of a SQLite poll agree on it. */
static inline void now(builder *b)
{
    if (b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER)
        param(b, SQLQ_P_NOW);
    else
        sqlq_sql_text_add(&b->t, "%s", sqlq_dialect_now_ms(b->c->dialect));
}
static inline const char *key_name(const builder *b, size_t i)
{
    return b->c->table->columns[b->c->table->key[i]].name;
}

static inline void obj(builder *b, const char *bare) { sqlq_catalog_object(&b->t, bare); }
static inline void leases(builder *b) { obj(b, b->c->names->leases_table); }

/* " WHERE bridge_name = ? AND table_name = ?": this bridge's state row. */
static inline void state_row(builder *b)
{
    sqlq_sql_text_add(&b->t, " WHERE bridge_name = ");
    param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, " AND table_name = ");
    param(b, SQLQ_P_TABLE);
}

/* "(SELECT sync_version FROM <state> WHERE ...)": the stored sync version, as a subquery. */
static inline void sync_subquery(builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT sync_version FROM ");
    obj(b, "state");
    state_row(b);
    sqlq_sql_text_add(&b->t, ")");
}

/* PostgreSQL: psqlODBC with UseDeclareFetch=1 runs a statement it sees starting with SELECT or
 * WITH as DECLARE CURSOR, FETCH and CLOSE: three round trips (with a savepoint around each in
 * a transaction). The statements of every batch return one row: a leading comment has them
 * sent as they are, one round trip. */
static inline void direct(builder *b)
{
    if (is_pg(b))
        sqlq_sql_text_add(&b->t, "/* sqlq */ ");
}

/* Version and operation columns of the changes relation `c`. */
static inline const char *ver(const builder *b)
{
    return b->c->change_tracking ? "c.SYS_CHANGE_VERSION" : "c." SQLQ_COL_VERSION;
}
static inline const char *opcol(const builder *b)
{
    return b->c->change_tracking ? "c.SYS_CHANGE_OPERATION" : "c." SQLQ_COL_OP;
}

/* capture_sql_image.c: the changed-column map, what this bridge delivered and the before
 * image, as batch columns (when the spec asks for them). */
void sqlq_capture_sql_image_columns(builder *b);
/* capture_sql_shape.c: the table's primary key now, as a scalar subquery (m_key). */
void sqlq_capture_sql_key_shape_expr(builder *b);

#endif
