/* result: the one result type of sqlq and the error detail that travels with it. */
#ifndef SQLQ_RESULT_H
#define SQLQ_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define SQLQ_NODISCARD __attribute__((warn_unused_result))
#define SQLQ_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SQLQ_NODISCARD
#define SQLQ_PRINTF(fmt, args)
#endif

typedef enum {
    SQLQ_OK = 0,
    SQLQ_E_NOMEM = -1,       /* allocation failed or a size cap was hit */
    SQLQ_E_INVALID = -2,     /* bad argument, configuration or input */
    SQLQ_E_TOO_LARGE = -3,   /* message or value over its limit */
    SQLQ_E_HTTP = -4,        /* the server answered with an error status */
    SQLQ_E_NETWORK = -5,     /* could not reach the server (curl error) */
    SQLQ_E_NOT_FOUND = -6,   /* queue, message, table or row does not exist */
    SQLQ_E_CONFLICT = -7,    /* already exists, being deleted, lease taken */
    SQLQ_E_POP_RECEIPT = -8, /* pop receipt no longer valid: ownership lost */
    SQLQ_E_PARSE = -9,       /* malformed XML, JSON, base64 or config */
    SQLQ_E_SQL = -10,        /* ODBC reported an error */
    SQLQ_E_IO = -11,         /* file or process I/O failed */
    SQLQ_E_TIMEOUT = -12,    /* an operation ran out of time */
    SQLQ_E_CANCELLED = -13,  /* shutdown was requested */
    SQLQ_E_LEASE_LOST = -14, /* a fencing token was rejected */
    SQLQ_E_UNSUPPORTED = -15, /* not possible with this source or dialect */
    SQLQ_E_REJECTED = -16,    /* a consumer handler refused the message for good: poison now */
    SQLQ_E_BODY = -17,        /* a message body its encoding cannot carry: refused before sending */
    SQLQ_E_UNAVAILABLE = -18  /* a consumer handler's target is down: an outage, no message's fault */
} sqlq_result;

/* Human detail for a failure. The first error recorded wins (curl's error buffer):
 * sqlq_error_set does nothing when err->code is already set. */
typedef struct sqlq_error {
    sqlq_result code;
    bool transient;        /* worth retrying: server busy, network, deadlock */
    int http_status;       /* 0 when not an HTTP failure */
    char azure_code[64];   /* x-ms-error-code or <Code> from the body */
    char request_id[64];   /* x-ms-request-id */
    char sqlstate[6];      /* ODBC SQLSTATE, "" when not SQL */
    long native_code;      /* driver native error (SQLite code, SQL Server number) */
    char reason[32];       /* a permanent failure's stable name for metrics and status
                            * ("table_key_changed"); "" when it has none */
    char message[512];
} sqlq_error;

/* Name a permanent failure (err->reason; see above); does nothing for NULL. */
void sqlq_error_reason(sqlq_error *err, const char *reason);

const char *sqlq_strerror(sqlq_result r);

void sqlq_error_clear(sqlq_error *err);
/* Record a failure (if err is not NULL and nothing is recorded yet); returns code. */
sqlq_result sqlq_error_set(sqlq_error *err, sqlq_result code, bool transient, const char *fmt,
                           ...) SQLQ_PRINTF(4, 5);
/* One line for a log or a terminal: "message (http=503 code=ServerBusy request_id=…)". */
void sqlq_error_format(const sqlq_error *err, char *out, size_t out_size);

#endif
