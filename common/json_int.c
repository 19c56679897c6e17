#include "json_int.h"

#include <errno.h>
#include <stdlib.h>

bool sqlq_json_int64_text(const char *text, int64_t *out)
{
    if (!text)
        return false;
    const char *digits = text + (*text == '+' || *text == '-');
    if (*digits < '0' || *digits > '9')
        return false; /* strtoll would skip spaces and accept an empty digit run */
    char *end = NULL;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (int64_t)n;
    return true;
}

bool sqlq_json_int64(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    return sqlq_json_int64_text(json_string_value(v), out);
}
