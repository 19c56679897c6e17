#include "conn_string.h"

#include "buf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool key_is(const char *key, size_t klen, const char *name)
{
    return strlen(name) == klen && strncasecmp(key, name, klen) == 0;
}

static bool key_in(const char *key, size_t klen, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++)
        if (key_is(key, klen, keys[i]))
            return true;
    return false;
}

char **sqlq_conn_string_values(const char *conn, const char *const *keys)
{
    size_t n = 0;
    bool oom = false;
    char **list = calloc(1, sizeof(char *));
    const char *p = conn ? conn : "";
    while (*p) {
        while (*p == ';' || *p == ' ')
            p++;
        const char *key = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        size_t klen = (size_t)(p - key);
        while (klen > 0 && key[klen - 1] == ' ')
            klen--;
        if (*p != '=')
            continue;
        p++;
        while (*p == ' ')
            p++;
        sqlq_buf v;
        sqlq_buf_init(&v, 4096);
        sqlq_result r = SQLQ_OK;
        if (*p == '{') {
            for (p++; *p && r == SQLQ_OK; p++) {
                if (*p == '}' && p[1] != '}')
                    break;
                if (*p == '}')
                    p++;
                r = sqlq_buf_addc(&v, *p);
            }
            while (*p && *p != ';')
                p++;
        } else {
            const char *start = p;
            while (*p && *p != ';')
                p++;
            size_t vlen = (size_t)(p - start);
            while (vlen > 0 && start[vlen - 1] == ' ')
                vlen--;
            r = sqlq_buf_add(&v, start, vlen);
        }
        if (!list || r == SQLQ_E_NOMEM) {
            oom = true;
            break;
        }
        if (r == SQLQ_OK && v.len > 0 && key_in(key, klen, keys)) {
            char **grown = realloc(list, (n + 2) * sizeof(char *));
            if (!grown) {
                sqlq_buf_free(&v);
                sqlq_conn_string_list_free(list);
                return NULL;
            }
            list = grown;
            list[n++] = sqlq_buf_take(&v, NULL);
            list[n] = NULL;
        }
        sqlq_buf_free(&v);
    }
    if (oom) {
        sqlq_conn_string_list_free(list);
        return NULL;
    }
    return list;
}

void sqlq_conn_string_list_free(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}
