/* sql_text: SQL text under construction, with a sticky first error and dialect quoting. */
#ifndef SQLQ_SQL_TEXT_H
#define SQLQ_SQL_TEXT_H

#include "buf.h"
#include "db.h"
#include "dialect.h"
#include "result.h"

/* Every append is a no-op once one has failed; sqlq_sql_text_take reports that first failure.
 * Callers build a whole statement without checking each step. */
typedef struct sqlq_sql_text {
    sqlq_buf buf;
    sqlq_result rc;
    const sqlq_dialect *dialect;
} sqlq_sql_text;

void sqlq_sql_text_init(sqlq_sql_text *s, const sqlq_dialect *d);
void sqlq_sql_text_free(sqlq_sql_text *s);
void sqlq_sql_text_add(sqlq_sql_text *s, const char *fmt, ...) SQLQ_PRINTF(2, 3);
/* An identifier quoted for the dialect. */
void sqlq_sql_text_ident(sqlq_sql_text *s, const char *ident);
/* prefix + quoted identifier: "c." + "\"id\"". */
void sqlq_sql_text_col(sqlq_sql_text *s, const char *prefix, const char *ident);
/* A schema-qualified user table, quoted. */
void sqlq_sql_text_table(sqlq_sql_text *s, const sqlq_table_name *t);
/* A string literal (names of our own objects only, never user data). */
void sqlq_sql_text_literal(sqlq_sql_text *s, const char *text);
/* Hand the text over (caller frees), or report the first failure in err. */
SQLQ_NODISCARD sqlq_result sqlq_sql_text_take(sqlq_sql_text *s, char **out, sqlq_error *err);

#endif
