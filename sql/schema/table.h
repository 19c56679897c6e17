/* table: what sqlq must know of a user table: its columns and primary key (or, through
 * table_key.h, the unique index that stands in for it). */
#ifndef SQLQ_TABLE_H
#define SQLQ_TABLE_H

#include "db.h"
#include "dialect.h"
#include "result.h"

#include <stdbool.h>

typedef struct sqlq_column {
    char *name;
    char *type;     /* declared type name as the database reports it (lowercase) */
    short sql_type; /* ODBC SQL_* type */
    bool nullable;
    bool in_key;    /* part of the primary key */
    int key_pos;    /* 1-based position in the primary key, 0 when not */
} sqlq_column;

typedef struct sqlq_table {
    sqlq_table_name name;
    sqlq_column *columns; /* in table order */
    size_t ncolumns;
    size_t *key;          /* indexes into columns, in key order */
    size_t nkey;
    char *key_index;      /* the unique index used as the key (table_key.h); NULL: primary key */
} sqlq_table;

/* Discover columns and primary key. SQLQ_E_NOT_FOUND when the table does not exist;
 * SQLQ_E_INVALID ("table X has no primary key") when it has none. The result's name is the
 * catalog's spelling: databases with schemas fill in the schema the name resolved to
 * (search_path, default schema, current database), and PostgreSQL falls back to the lower-cased name when the
 * name as written does not exist (its rule for unquoted names). SQLite keeps the name as given. */
SQLQ_NODISCARD sqlq_result sqlq_table_describe(sqlq_db *db, const sqlq_table_name *name,
                                               sqlq_table **out, sqlq_error *err);
/* The same, but a table without a primary key is described too (nkey 0): for commands that
 * need no key (setup --drop) and for table_key.h, which may choose a unique index instead. */
SQLQ_NODISCARD sqlq_result sqlq_table_describe_any(sqlq_db *db, const sqlq_table_name *name,
                                                   sqlq_table **out, sqlq_error *err);
void sqlq_table_free(sqlq_table *t);
/* The catalog query sqlq_table_describe runs, and its parameters for a table name (the
 * quoted name is built in quoted, which must outlive params). Exposed for unit tests. */
const char *sqlq_table_describe_sql(const sqlq_dialect *d);
SQLQ_NODISCARD sqlq_result sqlq_table_describe_params(const sqlq_dialect *d,
                                                      const sqlq_table_name *name, sqlq_buf *quoted,
                                                      sqlq_param *params, size_t *nparams);
/* The ODBC SQL_* type for a declared type name as the catalog gives it. */
short sqlq_table_sql_type(const sqlq_dialect *d, const char *type_name);
/* The column named name: the exact name first, else a unique case-insensitive match (SQLite
 * and SQL Server compare identifiers without case; a SQL Server "CustomerId" onto a PostgreSQL
 * "customerid"). NULL when there is none or the match is ambiguous. */
const sqlq_column *sqlq_table_column(const sqlq_table *t, const char *name);

/* How a table described again differs from an earlier description. */
typedef enum {
    SQLQ_TABLE_SAME = 0,            /* same columns, names, types and key */
    SQLQ_TABLE_COLUMNS_CHANGED = 1, /* columns added, dropped, renamed, retyped or moved; same key */
    SQLQ_TABLE_KEY_CHANGED = 2      /* another primary key, or a key column renamed or retyped */
} sqlq_table_change;
sqlq_table_change sqlq_table_compare(const sqlq_table *was, const sqlq_table *now);
/* The key as "name type, …" in key order (for messages), cut to fit out. */
void sqlq_table_key_text(const sqlq_table *t, char *out, size_t size);
/* What changed, for a log line: "added=a,b dropped=c retyped=d" (cut to fit out). */
void sqlq_table_change_text(const sqlq_table *was, const sqlq_table *now, char *out, size_t size);

#endif
