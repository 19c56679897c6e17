/* dialect_parts: the builders several databases share, kept beside their module, that the
 * dialect tables (each database folder's dialect file) point at; what only one database needs
 * lives in its own folder. Only the dialect tables call them; everything else goes through
 * sqlq_dialect. */
#ifndef SQLQ_DIALECT_PARTS_H
#define SQLQ_DIALECT_PARTS_H

#include "buf.h"
#include "db.h"
#include "dialect.h"
#include "keyset.h"

#include <jansson.h>

/* table.c: the ODBC SQL_* type of a declared type (lower case). */
short sqlq_table_sql_type_server(const char *type); /* PostgreSQL and SQL Server names */
/* table.c: describe_sql's parameters: the quoted name. */
SQLQ_NODISCARD sqlq_result sqlq_table_describe_params_quoted(const sqlq_dialect *d,
                                                             const sqlq_table_name *name,
                                                             sqlq_buf *quoted, sqlq_param *params,
                                                             size_t *nparams);

/* catalog.c: the declared type of one key_types_sql row as the catalog gives it (DDL text). */
char *sqlq_catalog_key_type_as_is(json_t *row);

/* keyset.c: keyset_param_sql's "?", and the parts the databases' own write with: the declared
 * type without length or precision when it is a plain name (else NULL), and CAST(? AS type). */
SQLQ_NODISCARD sqlq_result sqlq_keyset_param_sql_plain(const sqlq_keyset_col *c, sqlq_buf *out);
const char *sqlq_keyset_plain_type(const char *type, char *buf, size_t size);
SQLQ_NODISCARD sqlq_result sqlq_keyset_cast_param(const char *type, sqlq_buf *out);

/* upsert.c: the sink's upsert. */
SQLQ_NODISCARD sqlq_result sqlq_upsert_sql_on_conflict(const sqlq_dialect *d,
                                                       const sqlq_table_name *t,
                                                       const char *const *cols, size_t ncols,
                                                       const char *const *key, size_t nkey,
                                                       sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_upsert_sql_merge(const sqlq_dialect *d, const sqlq_table_name *t,
                                                 const char *const *cols, size_t ncols,
                                                 const char *const *key, size_t nkey,
                                                 sqlq_buf *out);

/* version_guard.c: the sink's version table. */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_create_sql_if_not_exists(const sqlq_dialect *d,
                                                                       const sqlq_table_name *state,
                                                                       sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim_sql_on_conflict(const sqlq_dialect *d,
                                                                    const sqlq_table_name *state,
                                                                    sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim_sql_merge(const sqlq_dialect *d,
                                                              const sqlq_table_name *state,
                                                              sqlq_buf *out);

#endif
