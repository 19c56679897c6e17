/* conn_string: attributes of an ODBC connection string ("key=value;…", values maybe {braced}):
 * the one parser: its shape checked before connecting, the values of given keys, its secrets. */
#ifndef SQLQ_CONN_STRING_H
#define SQLQ_CONN_STRING_H

#include "result.h"

/* The keys whose values are passwords, case-insensitive (ODBC keywords are): PWD and Password
 * (psqlODBC, MariaDB and MySQL Connector/ODBC, SQL Server), and MySQL's multi-factor PWD1..3,
 * Password1..3. NULL-terminated. */
extern const char *const sqlq_conn_string_password_keys[];

/* SQLQ_E_INVALID when conn has a {braced} value that never closes: the driver manager would
 * read the rest of the string, PWD= and all, as that value (a driver name in its error
 * message), where no redaction finds it. The message names the key and the offset, never a
 * value. */
SQLQ_NODISCARD sqlq_result sqlq_conn_string_check(const char *conn, sqlq_error *err);

/* Every non-empty value whose key (case-insensitive, blanks around it dropped) is one of keys
 * (NULL-terminated), in order, unbraced ({a}}b} is "a}b"), blanks around unbraced values
 * dropped; repeated keys give repeated values (drivers differ on which one wins). A
 * NULL-terminated list, NULL only when out of memory; free it with sqlq_conn_string_list_free. */
char **sqlq_conn_string_values(const char *conn, const char *const *keys);

/* What must never reach a log line or an error message: every password value (the keys
 * above) both unbraced and as written ("a}}b" as well as "a}b"), and the password of psqlODBC's
 * pqopt={… password=…} libpq options. A list as sqlq_conn_string_values gives. */
char **sqlq_conn_string_secrets(const char *conn);

/* Which database a connection string reaches, for messages: its DSN, Server, Host, Port and
 * Database attributes as written ("Server=db1;Port=5432;Database=orders"; "Database=/x.db" for
 * SQLite), never any other attribute (no user, no password, no driver options), each value cut
 * at 120 bytes. "(no server or database named)" when it names none. Into out; returns out. */
const char *sqlq_conn_string_describe(const char *conn, char *out, size_t out_size);
void sqlq_conn_string_list_free(char **list);

#endif
