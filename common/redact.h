/* redact: secrets out of text on its way to a log line or an error message. Two rules: the
 * value after a key that names a secret (PWD=, Password=, AccountKey=, sig=, client_secret=,
 * …) becomes ***, whatever it is; and a registered secret long enough to be no ordinary word
 * (SQLQ_REDACT_MIN_SECRET bytes) is replaced wherever it appears. A short password therefore
 * never mangles other text ("execute" stays "execute" when the password is "x", a table named
 * like the password keeps its name). */
#ifndef SQLQ_REDACT_H
#define SQLQ_REDACT_H

#include "buf.h"
#include "result.h"

#include <stddef.h>

/* Shorter secrets are redacted only where a secret key names them. */
#define SQLQ_REDACT_MIN_SECRET 16

/* Redact text in place. secrets: NULL-terminated (or NULL), each replaced wherever it appears
 * when at least SQLQ_REDACT_MIN_SECRET bytes long. The text may grow (PWD=x becomes PWD=***);
 * on out of memory it is emptied rather than left unredacted. */
SQLQ_NODISCARD sqlq_result sqlq_redact(sqlq_buf *text, char *const *secrets);

/* The same into a fixed buffer (cut to fit; NUL-terminated). */
void sqlq_redact_into(char *text, size_t size, char *const *secrets);

#endif
