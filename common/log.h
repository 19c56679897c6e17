/* log: levelled key=value logging through a replaceable sink, with secrets redacted. */
#ifndef SQLQ_LOG_H
#define SQLQ_LOG_H

#include "buf.h"
#include "result.h"

#include <stdbool.h>

typedef enum {
    SQLQ_LOG_ERROR = 0,
    SQLQ_LOG_WARN = 1,
    SQLQ_LOG_INFO = 2,
    SQLQ_LOG_DEBUG = 3,
    SQLQ_LOG_TRACE = 4
} sqlq_log_level;

typedef enum { SQLQ_LOG_TEXT = 0, SQLQ_LOG_JSON = 1 } sqlq_log_format;

/* A sink receives one record: an event name and its fields as `key=value key="quoted value"`,
 * every value escaped (quotes, backslashes, control characters; see log_record.h), so a value
 * can never end a field or a line. Secrets registered with sqlq_log_add_secret are already
 * replaced by "***". */
typedef void (*sqlq_log_sink)(void *ctx, sqlq_log_level level, const char *event, const char *fields);

/* Process-wide logger settings: set once at start-up (or by a test) before threads run.
 * This is the one piece of shared state besides signal flags: every library logs through it
 * so a test or an embedding program can capture all output in one place. */
void sqlq_log_set_level(sqlq_log_level level);
void sqlq_log_set_sink(sqlq_log_sink sink, void *ctx); /* NULL = stderr in the chosen format */
void sqlq_log_set_format(sqlq_log_format format);
bool sqlq_log_enabled(sqlq_log_level level);
/* Never log this string: every occurrence is replaced by *** when it is at least
 * SQLQ_REDACT_MIN_SECRET (16) bytes long; a shorter one could be an ordinary word and is
 * redacted only as the value of a secret key (PWD=…, redact.h), which every log value is
 * checked for anyway. Thread-safe. */
void sqlq_log_add_secret(const char *secret);
void sqlq_log_clear_secrets(void);
/* Replace every registered secret in text, in place: for text that leaves the process by
 * another way than a log line (an error shown on the console's page). Thread-safe. */
void sqlq_log_redact(sqlq_buf *text);
bool sqlq_log_parse_level(const char *name, sqlq_log_level *out);
const char *sqlq_log_level_name(sqlq_log_level level);

/* fields_fmt formats `key=value` pairs; quote free text: err="%s". Each value is formatted on
 * its own and escaped when written (text) or put in a JSON object (json): the values passed
 * are data, never log syntax. */
void sqlq_log_write(sqlq_log_level level, const char *event, const char *fields_fmt, ...)
    SQLQ_PRINTF(3, 4);

/* Log an error: the fields of fields_fmt, then err="…" (sqlq_error_format: the message with
 * its HTTP status, service code and transience), the one way every library logs a failure:
 *     SQLQ_LOG_ERR(SQLQ_LOG_WARN, "lease_renew_failed", &err, "table=%s", table);
 * The error text is cut at SQLQ_LOG_ERROR_TEXT bytes. */
#define SQLQ_LOG_ERROR_TEXT 700
void sqlq_log_write_error(sqlq_log_level level, const char *event, const sqlq_error *err,
                          const char *fields_fmt, ...) SQLQ_PRINTF(4, 5);

#define SQLQ_LOG(level, event, ...)                                                                \
    do {                                                                                           \
        if (sqlq_log_enabled(level))                                                               \
            sqlq_log_write(level, event, __VA_ARGS__);                                             \
    } while (0)
#define SQLQ_ERROR(event, ...) SQLQ_LOG(SQLQ_LOG_ERROR, event, __VA_ARGS__)
#define SQLQ_WARN(event, ...) SQLQ_LOG(SQLQ_LOG_WARN, event, __VA_ARGS__)
#define SQLQ_INFO(event, ...) SQLQ_LOG(SQLQ_LOG_INFO, event, __VA_ARGS__)
#define SQLQ_DEBUG(event, ...) SQLQ_LOG(SQLQ_LOG_DEBUG, event, __VA_ARGS__)
#define SQLQ_TRACE(event, ...) SQLQ_LOG(SQLQ_LOG_TRACE, event, __VA_ARGS__)
#define SQLQ_LOG_ERR(level, event, err, ...)                                                       \
    do {                                                                                           \
        if (sqlq_log_enabled(level))                                                               \
            sqlq_log_write_error(level, event, err, __VA_ARGS__);                                  \
    } while (0)

/* A message from outside written over several lines (libpq's "server closed the connection
 * unexpectedly\n\tThis probably means…") as one line of text, in place: every run of blanks and
 * control characters becomes one space, none left at either end. The logger would escape
 * them (\n, \t) anyway; this keeps such a message readable as a sentence. */
void sqlq_log_one_line(char *text);

/* Render a record as one line (no newline) in the given format, as the stderr sink writes it;
 * for tests. Returns a malloc'd string or NULL. */
char *sqlq_log_render(sqlq_log_format format, sqlq_log_level level, const char *event,
                      const char *fields_fmt, ...) SQLQ_PRINTF(4, 5);

#endif
