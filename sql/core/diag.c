#include "diag.h"

#include "classify.h"
#include "redact.h"

#include <sqlext.h>
#include <stdio.h>
#include <string.h>

/* Append src to dst (size dst_size, NUL-terminated), flattening line breaks. */
static void append_flat(char *dst, size_t dst_size, const char *src)
{
    size_t used = strlen(dst);
    while (*src && used + 1 < dst_size) {
        char c = *src++;
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
        if (c == ' ' && used > 0 && dst[used - 1] == ' ')
            continue;
        dst[used++] = c;
    }
    dst[used] = '\0';
}

sqlq_result sqlq_diag_set(sqlq_error *err, SQLSMALLINT htype, SQLHANDLE h, const char *what,
                          char *const *secrets)
{
    if (!err || err->code != SQLQ_OK)
        return SQLQ_E_SQL;
    char text[sizeof(err->message)];
    snprintf(text, sizeof(text), "%s: ", what ? what : "ODBC");
    bool transient = false;
    SQLSMALLINT i = 1;
    for (; i <= 16; i++) {
        SQLCHAR state[6] = {0};
        SQLCHAR msg[1024] = {0};
        SQLINTEGER native = 0;
        SQLSMALLINT msg_len = 0;
        SQLRETURN rc =
            SQLGetDiagRec(htype, h, i, state, &native, msg, (SQLSMALLINT)sizeof(msg), &msg_len);
        if (!SQL_SUCCEEDED(rc))
            break;
        if (i == 1) {
            memcpy(err->sqlstate, state, sizeof(err->sqlstate));
            err->sqlstate[sizeof(err->sqlstate) - 1] = '\0';
            err->native_code = (long)native;
        } else {
            append_flat(text, sizeof(text), " | ");
        }
        if (sqlq_classify_sql_transient((const char *)state, (long)native))
            transient = true;
        /* Drop the trailing punctuation drivers leave ("…;" then a newline). */
        size_t n = strlen((const char *)msg);
        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ' || msg[n - 1] == ';'))
            msg[--n] = '\0';
        append_flat(text, sizeof(text), (const char *)msg);
    }
    if (i == 1)
        append_flat(text, sizeof(text), "failed without diagnostics");
    sqlq_redact_into(text, sizeof(text), secrets);
    sqlq_error_set(err, SQLQ_E_SQL, transient, "%s", text);
    return SQLQ_E_SQL;
}
