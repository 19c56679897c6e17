#include "result.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *sqlq_strerror(sqlq_result r)
{
    switch (r) {
    case SQLQ_OK: return "ok";
    case SQLQ_E_NOMEM: return "out of memory";
    case SQLQ_E_INVALID: return "invalid argument";
    case SQLQ_E_TOO_LARGE: return "too large";
    case SQLQ_E_HTTP: return "server error";
    case SQLQ_E_NETWORK: return "network error";
    case SQLQ_E_NOT_FOUND: return "not found";
    case SQLQ_E_CONFLICT: return "conflict";
    case SQLQ_E_POP_RECEIPT: return "pop receipt mismatch";
    case SQLQ_E_PARSE: return "parse error";
    case SQLQ_E_SQL: return "SQL error";
    case SQLQ_E_IO: return "I/O error";
    case SQLQ_E_TIMEOUT: return "timed out";
    case SQLQ_E_CANCELLED: return "cancelled";
    case SQLQ_E_LEASE_LOST: return "lease lost";
    case SQLQ_E_UNSUPPORTED: return "unsupported";
    case SQLQ_E_REJECTED: return "rejected by the handler";
    case SQLQ_E_BODY: return "message body cannot be sent";
    case SQLQ_E_UNAVAILABLE: return "the handler's target is unavailable";
    }
    return "unknown error";
}

void sqlq_error_clear(sqlq_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

void sqlq_error_reason(sqlq_error *err, const char *reason)
{
    if (err)
        snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
}

sqlq_result sqlq_error_set(sqlq_error *err, sqlq_result code, bool transient, const char *fmt, ...)
{
    if (!err || err->code != SQLQ_OK)
        return code;
    err->code = code;
    err->transient = transient;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return code;
}

void sqlq_error_format(const sqlq_error *err, char *out, size_t out_size)
{
    if (!out || out_size == 0)
        return;
    if (!err || err->code == SQLQ_OK) {
        snprintf(out, out_size, "no error");
        return;
    }
    int n = snprintf(out, out_size, "%s", err->message[0] ? err->message : sqlq_strerror(err->code));
    if (n < 0 || (size_t)n >= out_size)
        return;
    size_t used = (size_t)n;
    if (err->http_status)
        used += (size_t)snprintf(out + used, out_size - used, " (http=%d%s%s%s%s)", err->http_status,
                                 err->azure_code[0] ? " code=" : "", err->azure_code,
                                 err->request_id[0] ? " request_id=" : "", err->request_id);
    else if (err->sqlstate[0] && used < out_size)
        snprintf(out + used, out_size - used, " (sqlstate=%s native=%ld)", err->sqlstate,
                 err->native_code);
}
