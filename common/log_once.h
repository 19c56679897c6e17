/* log_once: the texts a long-lived owner (a route) has already logged, so that something it
 * redoes (a source reopened after each failure) logs each distinct text once per process. */
#ifndef SQLQ_LOG_ONCE_H
#define SQLQ_LOG_ONCE_H

#include <stdbool.h>

typedef struct sqlq_log_once sqlq_log_once;

/* NULL when out of memory (then every text counts as new). */
sqlq_log_once *sqlq_log_once_create(void);
void sqlq_log_once_destroy(sqlq_log_once *s); /* accepts NULL */
/* True the first time text is offered (and always when s is NULL, or when it already holds
 * SQLQ_LOG_ONCE_MAX texts or cannot copy this one): log it then. Thread-safe. */
bool sqlq_log_once_first(sqlq_log_once *s, const char *text);

#define SQLQ_LOG_ONCE_MAX 64

#endif
