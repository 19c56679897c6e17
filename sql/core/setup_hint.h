/* setup_hint: a table's name as `sqlq setup --table` takes it, to paste into a shell, for the
 * commands sqlq's messages tell the operator to run. */
#ifndef SQLQ_SETUP_HINT_H
#define SQLQ_SETUP_HINT_H

#include "dialect.h"

#include <stddef.h>

#define SQLQ_SETUP_ARG_MAX 1200 /* room for any two parts quoted */
#define SQLQ_SETUP_ROUTE_ARGS_MAX (SQLQ_SETUP_ARG_MAX + 680) /* and a bridge name */

/* schema.name (name alone when schema is default_schema, which may be NULL), each part
 * double-quoted ("" for ") unless it is lowercase ASCII letters, digits, _ and $ (as
 * sqlq_table_name_parse and PostgreSQL read it as written), the whole single-quoted when a
 * shell would read it otherwise. Truncated to size. */
void sqlq_setup_table_arg(const sqlq_table_name *name, const char *default_schema, char *out,
                          size_t size);
/* The same for a table's text (a table key, a name as the user wrote it): parsed, else the
 * text single-quoted as a shell word. */
void sqlq_setup_table_arg_text(const char *table, const char *default_schema, char *out,
                               size_t size);
/* A route's arguments to sqlq setup: `--table T` (as sqlq_setup_table_arg), then
 * ` --bridge-name B` (a shell word) when bridge is neither NULL, empty nor "default".
 * Truncated to size. */
void sqlq_setup_route_args(const sqlq_table_name *name, const char *default_schema,
                           const char *bridge, char *out, size_t size);

#endif
