/* dialect: the SQL that differs between the databases sqlq speaks to: one table of values and
 * hooks per database (sql/<database>/), registered in dialect.c. */
#ifndef SQLQ_DIALECT_H
#define SQLQ_DIALECT_H

#include "buf.h"
#include "db.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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

/* How a cursor's safety lag reads in SQL (cursor_query.c). */
typedef enum {
    SQLQ_LAG_NONE = 0,  /* cursor sources not supported */
    SQLQ_LAG_JULIANDAY, /* julianday(c) < julianday('now', '-s seconds'): time as ISO text */
    SQLQ_LAG_INTERVAL,  /* c < clock_timestamp() - interval 'n milliseconds' */
    SQLQ_LAG_DATEADD,   /* c < DATEADD(millisecond, -n, SYSDATETIME()) */
    SQLQ_LAG_SYSDATE,   /* c < SYSDATE(6) - INTERVAL n MICROSECOND (MariaDB, MySQL; UTC) */
} sqlq_lag_syntax;

struct sqlq_keyset_col;
struct sqlq_change_source_ops;

/* A dialect: everything that differs between databases, as data and builders, one file per
 * database (sqlite_dialect.c, pg_dialect.c, mssql_dialect.c), registered in dialect.c.
 * Code outside those files asks the table; it never compares dialects. docs/dialects.md lists
 * what a new dialect must provide. */
struct sqlq_dialect {
    const char *name;      /* "sqlite", "postgres", "mssql": logs and docs */
    const char *title;     /* "SQLite", "PostgreSQL", "SQL Server": messages */
    const char *dbms_name; /* the SQL_DBMS_NAMEs that select it, '|' between (any case) */
    /* Lines (markdown, NULL-terminated) of the configuration reference's section on this
     * database (docs/configuration.md); NULL: none. */
    const char *const *config_doc;
    /* A word of the ODBC driver's name (any case) whose Database= is a file the driver creates
     * when it is missing (a check that changes nothing must not connect then); NULL: none. */
    const char *file_driver;

    /* ---- the connection (db.c) */
    const char *const *session_sql; /* statements run once connected, NULL-terminated; NULL: none */
    bool serial_writer;      /* one writer at a time: BEGIN IMMEDIATE/COMMIT as statements,
                              * no parallel writes, commits come in version order */
    bool wide_text;          /* text parameters and statements travel as UTF-16 */
    bool keeps_plans;        /* the capture loop prepares its statements once per connection
                              * (sqlq_db_keep_prepared): the server keeps their plans */
    bool columns_at_prepare; /* the driver describes a statement's columns once, at prepare:
                              * a kept SELECT * would answer with a table's old columns after
                              * ALTER TABLE, so sqlq_db_keep_prepared keeps nothing */
    size_t
        long_binary_over; /* binary parameters longer than this bind as LONGVARBINARY (0: never) */

    /* ---- values (row_json.c, sink parameters) */
    bool dynamic_types;   /* any value in any column; the declared type is only an affinity */
    bool tz_text_in_utc;  /* timestamptz text comes as UTC wall time without an offset */
    const char *utc_type_name; /* with tz_text_in_utc: the driver's type name of those columns
                                * (NULL: "timestamptz"; MariaDB: "timestamp") */
    bool tinyint1_bool;        /* TINYINT(1) columns (MySQL's BOOLEAN) holding 0 or 1 read as
                                * false/true (the driver reports them as TINYINT) */
    bool exact_time_text; /* date/time columns are read as exact text: (to_json(c) #>> '{}') */
    bool bool_as_text;    /* boolean parameters bind as 'true'/'false' (else 1/0) */
    bool time_param_utc_wall; /* timestamp parameters with an offset bind as UTC wall time
                               * 'YYYY-MM-DD HH:MM:SS.ffffff' (MariaDB refuses offsets) */
    /* The sink's test for an error that says the row itself breaks a NOT NULL or CHECK
     * constraint, in the database's own codes (sql_sink.c first tests the portable SQLSTATEs
     * 23502, 23514 and class 22); NULL: the database has none beyond those. */
    bool (*row_rejected)(const sqlq_error *e);
    /* The connection-string option that makes the driver count the rows a statement found,
     * not those it changed, which the sink's version guard cannot work with (it refuses to
     * start, naming this); NULL: the database's drivers have none known. */
    const char *found_rows_option;

    /* ---- names and literals */
    char ident_open, ident_close; /* "a""b" or [a]]b] */
    const char *literal_prefix;   /* before a string literal: "N" (SQL Server) or "" */
    bool literal_backslash_e;     /* E'' with doubled backslashes when one occurs (PostgreSQL) */
    bool schemas;                 /* tables live in schemas (false: one namespace) */
    const char *home_schema;      /* the default schema ("public", "dbo"; "" without schemas) */
    bool folds_case;              /* unquoted names fold to lower case (PostgreSQL) */
    bool names_ignore_case;       /* "Orders" and "orders" name the same table (SQLite) */
    bool key_may_be_null;      /* primary-key columns may hold NULL (SQLite, but for the rowid) */
    const char *object_prefix; /* sqlq's own objects: "sqlq." (schema) or "sqlq_" (prefix) */
    const char *text_any_length; /* a column type for text of any length ("TEXT") */
    const char *add_column;      /* ALTER TABLE t <add_column> c type: "ADD COLUMN " or "ADD " */
    bool create_if_not_exists;   /* CREATE TABLE IF NOT EXISTS (else tested with OBJECT_ID) */
    /* An INSERT that skips a row whose key exists: head (… INTO), tail after the VALUES list;
     * head NULL: none (test first, under a lock). */
    const char *insert_ignore_head, *insert_ignore_tail;

    /* ---- time */
    const char *now_ms; /* SQL expression: the database's current time, ms since the epoch, UTC */

    /* ---- sqlq's shared objects (catalog_objects.c, catalog.c) */
    const char *const *catalog_create; /* statements, NULL-terminated, idempotent */
    const char *const *catalog_drop;   /* statements, NULL-terminated */
    const char *catalog_token_object;  /* the object that numbers lease grants */
    const char *ddl_lock_sql;      /* serialises setup within a transaction; NULL: none needed */
    const char *object_exists_sql; /* count(*) of sqlq objects named ? (bare name) */
    const char *schema_exists_sql; /* count(*) of the sqlq schema; NULL without schemas */
    const char *schema_create_sql; /* NULL without schemas */
    const char *resolve_sql;       /* s, n of the table named by each ? (quoted name) */
    int resolve_nparams;           /* how many times resolve_sql takes the name */
    const char *column_exists_sql; /* count(*) of column ? (2nd) in table ? (1st: object name) */
    const char *key_types_sql;     /* n, t (+ ml, p, sc) of the columns of table ? */
    /* The declared type of one key_types_sql row, safe to paste in DDL ("" to leave it out). */
    char *(*key_type)(json_t *row);
    /* Before `sqlq setup` creates anything: warn (log) about what in this session would make
     * sqlq's objects misbehave; NULL: nothing to check. */
    void (*setup_warn)(sqlq_db *db);
    /* The registry upsert: head, sqlq's "tables", tail; binds kind, bridge_name, table_name,
     * object_name; created_ms is the database's now. */
    const char *registry_upsert_head;
    const char *registry_upsert_tail;

    /* ---- describing a user table (table.c) */
    const char *describe_sql;
    /* count(*) of the schema (attached database) named ?, where describe_sql fails on an
     * unknown one rather than returning no rows; NULL otherwise. */
    const char *schema_known_sql;
    /* Parameters of describe_sql for name; quoted keeps the text they point into. */
    sqlq_result (*describe_params)(const sqlq_dialect *d, const sqlq_table_name *name,
                                   sqlq_buf *quoted, sqlq_param *params, size_t *nparams);
    short (*sql_type)(const char *lower_type_name); /* ODBC SQL_* type of a declared type */
    /* The table's unique indexes, one row per key column (table_key.c); NULL: unsupported.
     * Parameters: SQLite name, schema, schema; else describe_params'. */
    const char *unique_keys_sql;
    /* Without unique_keys_sql: why the key must be the primary key, for messages (NULL: sqlq
     * cannot list the unique indexes). */
    const char *primary_key_only_why;

    /* ---- cursor state (cursor_state.c, cursor_status.c) */
    const char *cursor_state_create;
    const char *cursor_lag_rule_exists; /* count of the lag_rule column */
    const char *cursor_lag_rule_add;

    /* ---- change capture: the database's change sources (change_source.h), NULL-terminated;
     * the first is what --source auto picks. NULL: sqlq cannot capture its changes. */
    const struct sqlq_change_source_ops *const *sources;

    /* ---- keyset paging and cursors (keyset.c, cursor_query.c) */
    sqlq_lag_syntax lag_syntax;
    bool rowversion; /* rowversion columns, exact below MIN_ACTIVE_ROWVERSION() (SQL Server) */
    bool row_values; /* (a, b) > (?, ?) compares row values; else expanded to ORs */
    /* A column's value as the text sqlq stores as a cursor / key position. */
    sqlq_result (*keyset_value_sql)(const struct sqlq_keyset_col *c, sqlq_buf *out);
    /* The parameter that takes such a text back ("?" or "CAST(? AS type)"). */
    sqlq_result (*keyset_param_sql)(const struct sqlq_keyset_col *c, sqlq_buf *out);

    /* ---- SQL builders */
    bool limit_top;      /* SELECT TOP (n) rather than LIMIT n */
    bool drop_if_exists; /* DROP TABLE IF EXISTS (SQL Server before 2016 lacks it) */
    /* The sink's upsert: INSERT … ON CONFLICT or MERGE (upsert.c). */
    sqlq_result (*upsert_sql)(const sqlq_dialect *d, const sqlq_table_name *t,
                              const char *const *cols, size_t ncols, const char *const *key,
                              size_t nkey, sqlq_buf *out);
    const char *upsert_excluded; /* the proposed row in ON CONFLICT ("excluded."); NULL: MERGE */
    /* The sink's version table (version_guard.c): create when missing; the claim statement. */
    sqlq_result (*version_guard_create_sql)(const sqlq_dialect *d, const sqlq_table_name *state,
                                            sqlq_buf *out);
    sqlq_result (*version_guard_claim_sql)(const sqlq_dialect *d, const sqlq_table_name *state,
                                           sqlq_buf *out);
};

/* The dialect of the database whose SQL_DBMS_NAME is dbms_name; NULL when none is registered. */
const sqlq_dialect *sqlq_dialect_find(const char *dbms_name);
/* The dialect whose file_driver the ODBC driver name driver contains; NULL when none. */
const sqlq_dialect *sqlq_dialect_of_file_driver(const char *driver);
/* The i-th registered dialect (0-based); NULL past the last. */
const sqlq_dialect *sqlq_dialect_at(size_t i);
/* The registered dialects' titles, for messages: "SQLite, PostgreSQL, SQL Server, MariaDB". */
void sqlq_dialect_titles(char *out, size_t size);

extern const sqlq_dialect sqlq_dialect_sqlite;
extern const sqlq_dialect sqlq_dialect_postgres;
extern const sqlq_dialect sqlq_dialect_mssql;
extern const sqlq_dialect sqlq_dialect_mariadb;

/* Append an identifier, quoted for the dialect: "a""b" (SQLite, PostgreSQL), [a]]b] (SQL Server).
 * Rejects identifiers containing NUL or over 255 bytes. */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_ident(const sqlq_dialect *d, const char *ident,
                                                    sqlq_buf *out);
/* The same for an identifier given with its length: rejects an embedded NUL, invalid UTF-8,
 * the empty string and more than 255 bytes (SQLQ_E_INVALID; out is left unchanged). */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_identn(const sqlq_dialect *d, const char *ident,
                                                     size_t len, sqlq_buf *out);
/* schema.name quoted (schema omitted when empty). */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_table(const sqlq_dialect *d, const sqlq_table_name *t,
                                                    sqlq_buf *out);
/* Append a string literal ('it''s'); only for names of our own objects in DDL, never user data. */
SQLQ_NODISCARD sqlq_result sqlq_dialect_quote_literal(const sqlq_dialect *d, const char *s,
                                                      sqlq_buf *out);
/* An SQL expression for the database's current time in milliseconds since the epoch (UTC). */
const char *sqlq_dialect_now_ms(const sqlq_dialect *d);

#endif
