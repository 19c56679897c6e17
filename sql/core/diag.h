/* diag: ODBC diagnostic records turned into an sqlq_error (SQLSTATE, native code, message). */
#ifndef SQLQ_DIAG_H
#define SQLQ_DIAG_H

#include "result.h"

#include <sql.h>

/* Record the diagnostics of handle h (of type htype) in err, if nothing is recorded yet:
 * SQLSTATE and native code of the first record; the message is "what: msg1 | msg2 …" with
 * every record in driver order (newlines flattened). err->transient is true when any record
 * is transient by sqlq_classify_sql_transient. The message is redacted (redact.h): the value
 * of every secret key (PWD=…) and every secret of at least 16 bytes (the PWD= values of the
 * connection string; secrets is a NULL-terminated list, or NULL) become ***; a shorter
 * password never blanks other text. Returns SQLQ_E_SQL (also when err is NULL). */
sqlq_result sqlq_diag_set(sqlq_error *err, SQLSMALLINT htype, SQLHANDLE h, const char *what,
                          char *const *secrets);

#endif
