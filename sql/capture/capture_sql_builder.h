/* capture_sql_builder: a capture statement under construction (sqlq_capture_builder: its text
 * and the role of each `?`) and the parts the shared builder (capture_sql*.c) and the sources'
 * own SQL (sql/<database>/) write with; sqlq_cb_ is its prefix. Internal to sql/. */
#ifndef SQLQ_CAPTURE_SQL_BUILDER_H
#define SQLQ_CAPTURE_SQL_BUILDER_H

#include "capture_sql.h"
#include "sql_text.h"

#include <stdlib.h>
#include <string.h>

struct sqlq_capture_builder {
    sqlq_sql_text t;
    sqlq_capture_stmt *st;
    const sqlq_capture_sql *c;
    bool resume; /* poll: only changes after the resume position (sqlq_capture_sql_poll_resume) */
};

static inline void sqlq_cb_init(sqlq_capture_builder *b, const sqlq_capture_sql *c,
                                sqlq_capture_stmt *st)
{
    memset(st, 0, sizeof(*st));
    sqlq_sql_text_init(&b->t, c->dialect);
    b->st = st;
    b->c = c;
    b->resume = false;
}

static inline sqlq_result sqlq_cb_done(sqlq_capture_builder *b, sqlq_error *err)
{
    return sqlq_sql_text_take(&b->t, &b->st->sql, err);
}

/* The source's SQL traits and parts. */
static inline const sqlq_capture_log_sql *sqlq_cb_log(const sqlq_capture_builder *b)
{
    return b->c->log_sql;
}

/* A `?` with its role. */
static inline void sqlq_cb_param(sqlq_capture_builder *b, sqlq_capture_param p)
{
    if (b->st->nparams >= SQLQ_CAPTURE_MAX_PARAMS) {
        b->t.rc = b->t.rc ? b->t.rc : SQLQ_E_INVALID;
        return;
    }
    b->st->params[b->st->nparams++] = p;
    sqlq_sql_text_add(&b->t, "?");
}

/* The current time in ms: a parameter the caller fills from its own clock when the source says
 * so (now_param: its two poll statements then agree on it), else the database's clock. */
static inline void sqlq_cb_now(sqlq_capture_builder *b)
{
    if (sqlq_cb_log(b)->now_param)
        sqlq_cb_param(b, SQLQ_P_NOW);
    else
        sqlq_sql_text_add(&b->t, "%s", sqlq_dialect_now_ms(b->c->dialect));
}

static inline const char *sqlq_cb_key_name(const sqlq_capture_builder *b, size_t i)
{
    return b->c->table->columns[b->c->table->key[i]].name;
}

/* One of sqlq's objects by its bare name; this route's leases table. */
static inline void sqlq_cb_obj(sqlq_capture_builder *b, const char *bare)
{
    sqlq_catalog_object(&b->t, bare);
}
static inline void sqlq_cb_leases(sqlq_capture_builder *b)
{
    sqlq_cb_obj(b, b->c->names->leases_table);
}

/* " WHERE bridge_name = ? AND table_name = ?": this bridge's state row. */
static inline void sqlq_cb_state_row(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, " WHERE bridge_name = ");
    sqlq_cb_param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, " AND table_name = ");
    sqlq_cb_param(b, SQLQ_P_TABLE);
}

/* "(SELECT sync_version FROM <state> WHERE ...)": the stored sync version, as a subquery. */
static inline void sqlq_cb_sync_subquery(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT sync_version FROM ");
    sqlq_cb_obj(b, "state");
    sqlq_cb_state_row(b);
    sqlq_sql_text_add(&b->t, ")");
}

/* The stored sync version as the source's reads take it: SQLQ_P_SYNC (sync_param) or the
 * subquery. */
static inline void sqlq_cb_sync_value(sqlq_capture_builder *b)
{
    if (sqlq_cb_log(b)->sync_param)
        sqlq_cb_param(b, SQLQ_P_SYNC);
    else
        sqlq_cb_sync_subquery(b);
}

/* "sqlq_version <= (the smallest sync version of the table's bridges)": log rows every bridge
 * of the table has passed. */
static inline void sqlq_cb_passed(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, SQLQ_COL_VERSION " <= (SELECT min(sync_version) FROM ");
    sqlq_cb_obj(b, "state");
    sqlq_sql_text_add(&b->t, " WHERE table_name = ");
    sqlq_cb_param(b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b->t, ")");
}

/* A statement returning one row, sent as it is (the source's `direct` prefix). */
static inline void sqlq_cb_direct(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "%s", sqlq_cb_log(b)->direct);
}

/* Version and operation columns of the changes relation `c`. */
static inline const char *sqlq_cb_ver(const sqlq_capture_builder *b)
{
    return sqlq_cb_log(b)->version_col;
}
static inline const char *sqlq_cb_opcol(const sqlq_capture_builder *b)
{
    return sqlq_cb_log(b)->op_col;
}

/* capture_sql.c: the parts of a change read. */
/* FROM item of the changes, as c (the source's changes_from, or sqlq's log of the table). */
void sqlq_cb_changes_from(sqlq_capture_builder *b);
/* left.key_i = right.key_i (right_aliased: right "k<i>" columns), joined with AND. */
void sqlq_cb_key_match(sqlq_capture_builder *b, const char *left, const char *right,
                       bool right_aliased);
/* " LEFT JOIN <leases> AS l ON l.key = c.key". */
void sqlq_cb_lease_join(sqlq_capture_builder *b);
/* The versions after the sync version (and up to the horizon when the source has one);
 * bound_params: the poll's form, which binds them (sync_param). */
void sqlq_cb_sync_bound(sqlq_capture_builder *b, bool bound_params);
/* Not yet delivered: no lease, a lease in flight (or abandoned), or released at an older
 * version. */
void sqlq_cb_unprocessed(sqlq_capture_builder *b);
/* SELECT of the next batch: k0.., m_v, m_op, m_att[, m_tok]; with tokens, m_tok numbered from
 * SQLQ_P_TOKEN_BASE; into (NULL: none) is written after the columns ("INTO #t"). */
void sqlq_cb_batch_select(sqlq_capture_builder *b, bool tokens, const char *into);
/* The final projection of a poll over the batch: b.*, m_row, m_key, r.* and the exact-value
 * columns; from: the batch's FROM item ("t AS b"), NULL for the batch as a derived table. */
void sqlq_cb_batch_with_rows(sqlq_capture_builder *b, const char *from);
/* The leases table's columns; the values of a lease from the batch's alias (owner_param:
 * SQLQ_P_OWNER, else the variable @owner); the upsert's tail (excluded: the proposed row). */
void sqlq_cb_lease_columns(sqlq_capture_builder *b);
void sqlq_cb_lease_values_from_batch(sqlq_capture_builder *b, const char *alias,
                                     bool owner_param);
void sqlq_cb_upsert_tail(sqlq_capture_builder *b, const char *excluded);
/* The table's canonical name, quoted, as one string literal. */
void sqlq_cb_table_literal(sqlq_capture_builder *b);

/* capture_sql_state.c: " (key columns…, version, attempts, expires, owner owner_type, token,
 * PRIMARY KEY (key…))", the leases table's columns in DDL. */
void sqlq_cb_leases_columns_ddl(sqlq_capture_builder *b, char *const *types,
                                const char *owner_type);

/* capture_sql_image.c: the changed-column map, what this bridge delivered and the before
 * image, as batch columns (when the spec asks for them). */
void sqlq_capture_sql_image_columns(sqlq_capture_builder *b);
/* capture_sql_key.c: the table's primary key now, as a scalar subquery (m_key). */
void sqlq_capture_sql_key_expr(sqlq_capture_builder *b);

#endif
