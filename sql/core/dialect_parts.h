/* dialect_parts: the per-database builders that live beside their module (one function per
 * database, kept where the rest of that SQL is) and that the dialect tables point at. Only the
 * dialect_*.c files call them; everything else goes through sqlq_dialect. */
#ifndef SQLQ_DIALECT_PARTS_H
#define SQLQ_DIALECT_PARTS_H

#include "buf.h"
#include "db.h"
#include "dialect.h"
#include "keyset.h"

#include <jansson.h>

/* table.c: the ODBC SQL_* type of a declared type (lower case). */
short sqlq_table_sql_type_sqlite(const char *type);
short sqlq_table_sql_type_server(const char *type); /* PostgreSQL and SQL Server names */
/* table.c: describe_sql's parameters: schema and name four times (SQLite), or the quoted name. */
SQLQ_NODISCARD sqlq_result sqlq_table_describe_params_sqlite(const sqlq_dialect *d,
                                                             const sqlq_table_name *name,
                                                             sqlq_buf *quoted, sqlq_param *params,
                                                             size_t *nparams);
SQLQ_NODISCARD sqlq_result sqlq_table_describe_params_quoted(const sqlq_dialect *d,
                                                             const sqlq_table_name *name,
                                                             sqlq_buf *quoted, sqlq_param *params,
                                                             size_t *nparams);

/* catalog.c: the declared type of one key_types_sql row, safe to paste in DDL. */
char *sqlq_catalog_key_type_sqlite(json_t *row);
char *sqlq_catalog_key_type_postgres(json_t *row);
char *sqlq_catalog_key_type_mssql(json_t *row);

/* keyset.c: keyset_value_sql and keyset_param_sql of each database. */
SQLQ_NODISCARD sqlq_result sqlq_keyset_value_sql_sqlite(const sqlq_keyset_col *c, sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_keyset_value_sql_postgres(const sqlq_keyset_col *c, sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_keyset_value_sql_mssql(const sqlq_keyset_col *c, sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_keyset_param_sql_plain(const sqlq_keyset_col *c, sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_keyset_param_sql_postgres(const sqlq_keyset_col *c, sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_keyset_param_sql_mssql(const sqlq_keyset_col *c, sqlq_buf *out);

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
SQLQ_NODISCARD sqlq_result sqlq_version_guard_create_sql_mssql(const sqlq_dialect *d,
                                                               const sqlq_table_name *state,
                                                               sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim_sql_on_conflict(const sqlq_dialect *d,
                                                                    const sqlq_table_name *state,
                                                                    sqlq_buf *out);
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim_sql_merge(const sqlq_dialect *d,
                                                              const sqlq_table_name *state,
                                                              sqlq_buf *out);

#endif
