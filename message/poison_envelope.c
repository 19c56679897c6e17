/* poison_envelope: writing and recognising the poison wrapper (see the header). */
#include "poison_envelope.h"

#include "json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sqlq_poison_envelope_write(const char *reason, json_t *message)
{
    json_t *o = json_object();
    if (!o || !message) {
        json_decref(o);
        json_decref(message);
        return NULL;
    }
    char cut[SQLQ_POISON_REASON_MAX];
    snprintf(cut, sizeof(cut), "%s", reason ? reason : "unknown");
    int rc = json_object_set_new(o, SQLQ_POISON_MARKER, json_integer(1));
    rc |= json_object_set_new(o, "reason", json_string(cut));
    rc |= json_object_set_new(o, "message", message);
    char *s = rc == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *sqlq_poison_envelope_wrap(const char *reason, const char *body, size_t len, size_t *out_len)
{
    size_t lead = 0;
    while (lead < len && body[lead] && strchr(" \t\r\n", body[lead]))
        lead++;
    /* Checked as text, never parsed into values: numbers no double holds are JSON too. */
    if (lead == len || (body[lead] != '{' && body[lead] != '[') || !sqlq_json_scan_value(body, len))
        return NULL;
    char cut[SQLQ_POISON_REASON_MAX];
    snprintf(cut, sizeof(cut), "%s", reason ? reason : "unknown");
    json_t *r = json_string(cut);
    char *quoted = json_dumps(r ? r : json_string("unknown"), JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(r);
    if (!quoted)
        return NULL;
    static const char head[] = "{\"" SQLQ_POISON_MARKER "\":1,\"reason\":";
    size_t n = sizeof(head) - 1 + strlen(quoted) + sizeof(",\"message\":") - 1 + len + 1;
    char *out = malloc(n + 1);
    if (out) {
        int k = snprintf(out, n + 1, "%s%s,\"message\":", head, quoted);
        memcpy(out + k, body, len);
        out[n - 1] = '}';
        out[n] = '\0';
        *out_len = n;
    }
    free(quoted);
    return out;
}

bool sqlq_poison_envelope_read(const char *body, size_t len, const char **out_msg, size_t *out_len)
{
    sqlq_json_member m[4];
    size_t n;
    if (!body || !sqlq_json_scan_members(body, len, m, 4, &n) || n != 3)
        return false;
    const sqlq_json_member *marker = NULL, *reason = NULL, *message = NULL;
    for (size_t i = 0; i < n; i++) {
        const sqlq_json_member **slot = sqlq_json_member_is(&m[i], SQLQ_POISON_MARKER) ? &marker
                                        : sqlq_json_member_is(&m[i], "reason")         ? &reason
                                        : sqlq_json_member_is(&m[i], "message")        ? &message
                                                                                       : NULL;
        if (!slot || *slot)
            return false; /* another member, or one twice */
        *slot = &m[i];
    }
    if (marker->value_len != 1 || marker->value[0] != '1' || reason->value[0] != '"' ||
        (message->value[0] != '{' && message->value[0] != '['))
        return false;
    *out_msg = message->value;
    *out_len = message->value_len;
    return true;
}
