/* table: what sqlq must know of a user table: its columns and primary key. */
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
    size_t *key;          /* indexes into columns, in primary-key order */
    size_t nkey;
} sqlq_table;

/* Discover columns and primary key. SQLQ_E_NOT_FOUND when the table does not exist;
 * SQLQ_E_INVALID ("table X has no primary key") when it has none. */
SQLQ_NODISCARD sqlq_result sqlq_table_describe(sqlq_db *db, const sqlq_table_name *name,
                                               sqlq_table **out, sqlq_error *err);
void sqlq_table_free(sqlq_table *t);
const sqlq_column *sqlq_table_column(const sqlq_table *t, const char *name);

#endif
