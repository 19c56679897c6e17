#include "log.h"

#include "buf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_SECRETS 32

static _Atomic int g_level = SQLQ_LOG_INFO;
static _Atomic int g_format = SQLQ_LOG_TEXT;
static sqlq_log_sink g_sink;
static void *g_sink_ctx;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_secrets[MAX_SECRETS];
static size_t g_nsecrets;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void sqlq_log_set_level(sqlq_log_level level) { atomic_store(&g_level, (int)level); }
void sqlq_log_set_format(sqlq_log_format format) { atomic_store(&g_format, (int)format); }

void sqlq_log_set_sink(sqlq_log_sink sink, void *ctx)
{
    pthread_mutex_lock(&g_lock);
    g_sink = sink;
    g_sink_ctx = ctx;
    pthread_mutex_unlock(&g_lock);
}

bool sqlq_log_enabled(sqlq_log_level level) { return (int)level <= atomic_load(&g_level); }

const char *sqlq_log_level_name(sqlq_log_level level)
{
    return (unsigned)level < 5 ? level_names[level] : "?";
}

bool sqlq_log_parse_level(const char *name, sqlq_log_level *out)
{
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(name, level_names[i]) == 0 ||
            (i == SQLQ_LOG_WARN && strcasecmp(name, "warning") == 0)) {
            *out = (sqlq_log_level)i;
            return true;
        }
    }
    return false;
}

void sqlq_log_add_secret(const char *secret)
{
    /* Very short strings would redact ordinary words; real keys and signatures are long. */
    if (!secret || strlen(secret) < 6)
        return;
    pthread_mutex_lock(&g_lock);
    bool known = false;
    for (size_t i = 0; i < g_nsecrets; i++)
        known = known || strcmp(g_secrets[i], secret) == 0;
    if (!known && g_nsecrets < MAX_SECRETS) {
        char *copy = strdup(secret);
        if (copy)
            g_secrets[g_nsecrets++] = copy;
    }
    pthread_mutex_unlock(&g_lock);
}

void sqlq_log_clear_secrets(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nsecrets; i++)
        free(g_secrets[i]);
    g_nsecrets = 0;
    pthread_mutex_unlock(&g_lock);
}

/* Replace every registered secret in s (in place; *** is never longer than a secret). */
static void redact(char *s)
{
    for (size_t i = 0; i < g_nsecrets; i++) {
        size_t n = strlen(g_secrets[i]);
        char *hit;
        while ((hit = strstr(s, g_secrets[i])) != NULL) {
            memcpy(hit, "***", 3);
            memmove(hit + 3, hit + n, strlen(hit + n) + 1);
        }
    }
}

static sqlq_result json_string(sqlq_buf *b, const char *s, size_t n)
{
    sqlq_result r = sqlq_buf_addc(b, '"');
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            r = sqlq_buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            r = sqlq_buf_printf(b, "\\u%04x", c);
        else
            r = sqlq_buf_addc(b, (char)c);
    }
    return r == SQLQ_OK ? sqlq_buf_addc(b, '"') : r;
}

/* fields: key=value pairs; a value is either "quoted with \" escapes" or runs to a space. */
static sqlq_result json_fields(sqlq_buf *b, const char *p)
{
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && *p) {
        while (*p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        if (!*p || !eq)
            break;
        r = sqlq_buf_addc(b, ',');
        if (r == SQLQ_OK)
            r = json_string(b, p, (size_t)(eq - p));
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(b, ':');
        p = eq + 1;
        sqlq_buf val;
        sqlq_buf_init(&val, 0);
        if (*p == '"') {
            for (p++; r == SQLQ_OK && *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                r = sqlq_buf_addc(&val, *p);
            }
            if (*p == '"')
                p++;
        } else {
            const char *end = strchr(p, ' ');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            r = sqlq_buf_add(&val, p, n);
            p += n;
        }
        if (r == SQLQ_OK)
            r = json_string(b, sqlq_buf_str(&val), val.len);
        sqlq_buf_free(&val);
    }
    return r;
}

char *sqlq_log_render(sqlq_log_format format, sqlq_log_level level, const char *event,
                      const char *fields)
{
    char ts[40];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000L);

    sqlq_buf b;
    sqlq_buf_init(&b, 1024 * 1024);
    sqlq_result r;
    if (format == SQLQ_LOG_JSON) {
        r = sqlq_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":", ts,
                            sqlq_log_level_name(level));
        if (r == SQLQ_OK)
            r = json_string(&b, event, strlen(event));
        if (r == SQLQ_OK)
            r = json_fields(&b, fields);
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(&b, '}');
    } else {
        r = sqlq_buf_printf(&b, "ts=%s level=%s event=%s%s%s", ts, sqlq_log_level_name(level), event,
                            fields[0] ? " " : "", fields);
    }
    return r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
}

void sqlq_log_write(sqlq_log_level level, const char *event, const char *fields_fmt, ...)
{
    if (!sqlq_log_enabled(level))
        return;
    char stack[1024];
    char *fields = stack;
    va_list ap;
    va_start(ap, fields_fmt);
    int n = vsnprintf(stack, sizeof(stack), fields_fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(stack)) {
        fields = malloc((size_t)n + 1);
        if (!fields)
            return;
        va_start(ap, fields_fmt);
        vsnprintf(fields, (size_t)n + 1, fields_fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&g_lock);
    redact(fields);
    if (g_sink) {
        g_sink(g_sink_ctx, level, event, fields);
    } else {
        char *line = sqlq_log_render((sqlq_log_format)atomic_load(&g_format), level, event, fields);
        if (line) {
            fprintf(stderr, "%s\n", line);
            free(line);
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (fields != stack)
        free(fields);
}
