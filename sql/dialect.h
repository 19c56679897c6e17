/* dialect: the SQL that differs between SQLite, PostgreSQL and SQL Server. */
#ifndef SQLQ_DIALECT_H
#define SQLQ_DIALECT_H

#include "buf.h"
#include "db.h"
#include "result.h"

/* A possibly schema-qualified table name as the user wrote it: "orders", "sales.orders",
 * "[dbo].[My Table]", "\"odd \"\"name\"\"\"". Parsed into parts; never pasted into SQL raw. */
typedef struct sqlq_table_name {
    char schema[256]; /* "" when not given */
    char name[256];
} sqlq_table_name;

SQLQ_NODISCARD sqlq_result sqlq_table_name_parse(const char *text, sqlq_table_name *out,
                                                 sqlq_error *err);
/* schema.name (or name) unquoted, for messages and logs. */
void sqlq_table_name_format(const sqlq_table_name *t, char *out, size_t out_size);

/* Append an identifier, quoted for the dialect: "a""b" (SQLite, PostgreSQL), [a]]b] (SQL Server).
 * Rejects identifiers containing NUL or over 255 bytes. */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_ident(sqlq_dialect_kind d, const char *ident,
                                                    sqlq_buf *out);
/* The same for an identifier given with its length: rejects an embedded NUL, invalid UTF-8,
 * the empty string and more than 255 bytes (SQLQ_E_INVALID; out is left unchanged). */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_identn(sqlq_dialect_kind d, const char *ident,
                                                     size_t len, sqlq_buf *out);
/* schema.name quoted (schema omitted when empty). */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_table(sqlq_dialect_kind d, const sqlq_table_name *t,
                                                    sqlq_buf *out);
/* Append a string literal ('it''s'); only for names of our own objects in DDL, never user data. */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_literal(sqlq_dialect_kind d, const char *s,
                                                      sqlq_buf *out);
/* An SQL expression for the database's current time in milliseconds since the epoch (UTC). */
const char *sqlq_dialect_now_ms(sqlq_dialect_kind d);

#endif
