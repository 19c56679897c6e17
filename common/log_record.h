/* log_record: one log line's fields, each value formatted on its own from the printf-style
 * `key=%s key="%s"` format, so that a value can never forge another field: rendered as
 * escaped key=value text or as a JSON object built with Jansson. */
#ifndef SQLQ_LOG_RECORD_H
#define SQLQ_LOG_RECORD_H

#include "buf.h"
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>

#define SQLQ_LOG_MAX_FIELDS 24

typedef struct sqlq_log_field {
    sqlq_slice key; /* points into the format (a literal the code wrote) */
    sqlq_buf value; /* the formatted value, raw: any bytes a caller passed */
    bool quoted;    /* the format quoted it ("free text") */
} sqlq_log_field;

typedef struct sqlq_log_record {
    sqlq_log_field fields[SQLQ_LOG_MAX_FIELDS];
    size_t n;
} sqlq_log_record;

/* Formats fmt's conversions one field at a time (consuming ap as vprintf would). Literal
 * text outside key=value pairs becomes a field "msg". On failure the record holds what was
 * formatted so far. Free with sqlq_log_record_free. */
SQLQ_NODISCARD sqlq_result sqlq_log_record_format(sqlq_log_record *rec, const char *fmt,
                                                  va_list *ap);
void sqlq_log_record_free(sqlq_log_record *rec);

/* Applies fn to every value (secret redaction), in place. */
void sqlq_log_record_each_value(sqlq_log_record *rec, void (*fn)(sqlq_buf *value));

/* `key=value key="escaped value"`: a value is quoted when the format quoted it or when it is
 * empty or holds a space, '=', '"' or anything escaped; inside quotes \" \\ \n \r \t, and
 * \xHH for other control bytes, DEL and bytes that are not UTF-8, \u00HH for C1 controls. */
SQLQ_NODISCARD sqlq_result sqlq_log_record_text(const sqlq_log_record *rec, sqlq_buf *out);

/* {"ts":…,"level":…,"event":…,"key":"value",…} as one line, ASCII only (JSON escapes). */
char *sqlq_log_record_json(const sqlq_log_record *rec, const char *ts, const char *level,
                           const char *event);

#endif
