#include "log.h"

#include "buf.h"
#include "log_record.h"
#include "redact.h"

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
static char *g_secrets[MAX_SECRETS + 1]; /* NULL-terminated */
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
    /* A shorter secret could be an ordinary word: it is redacted only after its key. */
    if (!secret || strlen(secret) < SQLQ_REDACT_MIN_SECRET)
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
    for (size_t i = 0; i < g_nsecrets; i++) {
        free(g_secrets[i]);
        g_secrets[i] = NULL;
    }
    g_nsecrets = 0;
    pthread_mutex_unlock(&g_lock);
}

/* Redact a value (redact.h): the values of secret keys, and every registered secret. */
static void redact(sqlq_buf *value)
{
    if (!value->data)
        return;
    value->len = strlen(value->data); /* a value with a NUL in it is cut there, like %s would */
    if (sqlq_redact(value, g_secrets) != SQLQ_OK && value->data)
        value->len = 0; /* emptied: never written unredacted */
}

void sqlq_log_redact(sqlq_buf *text)
{
    pthread_mutex_lock(&g_lock);
    redact(text);
    pthread_mutex_unlock(&g_lock);
}

static void timestamp(char *ts, size_t size)
{
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, size - n, ".%03ldZ", now.tv_nsec / 1000000L);
}

/* One line of a formatted, redacted record (no newline). Called with g_lock held. */
static char *render(sqlq_log_format format, sqlq_log_level level, const char *event,
                    const sqlq_log_record *rec)
{
    char ts[40];
    timestamp(ts, sizeof(ts));
    if (format == SQLQ_LOG_JSON)
        return sqlq_log_record_json(rec, ts, sqlq_log_level_name(level), event);
    sqlq_buf b;
    sqlq_buf_init(&b, 1024 * 1024);
    sqlq_result r = sqlq_buf_printf(&b, "ts=%s level=%s event=%s%s", ts, sqlq_log_level_name(level),
                                    event, rec->n ? " " : "");
    if (r == SQLQ_OK)
        r = sqlq_log_record_text(rec, &b);
    return r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
}

/* Formats fields_fmt value by value, and redacts each value. NULL-safe on failure: the
 * record then holds what was formatted, with "log_error" added when there is room. */
static void build(sqlq_log_record *rec, const char *fields_fmt, va_list *ap)
{
    sqlq_result r = sqlq_log_record_format(rec, fields_fmt, ap);
    if (r != SQLQ_OK && rec->n < SQLQ_LOG_MAX_FIELDS) {
        sqlq_log_field *f = &rec->fields[rec->n++];
        f->key = sqlq_slice_of("log_error");
        f->quoted = false;
        sqlq_buf_init(&f->value, 64);
        if (sqlq_buf_adds(&f->value, sqlq_strerror(r)) != SQLQ_OK)
            rec->n--; /* nothing to say it with */
    }
    sqlq_log_record_each_value(rec, redact);
}

void sqlq_log_one_line(char *text)
{
    char *w = text;
    bool gap = false;
    for (const char *r = text; r && *r; r++) {
        unsigned char c = (unsigned char)*r;
        if (c <= ' ' || c == 0x7f) {
            gap = w != text;
            continue;
        }
        if (gap)
            *w++ = ' ';
        gap = false;
        *w++ = (char)c;
    }
    if (w)
        *w = '\0';
}

char *sqlq_log_render(sqlq_log_format format, sqlq_log_level level, const char *event,
                      const char *fields_fmt, ...)
{
    va_list ap;
    va_start(ap, fields_fmt);
    sqlq_log_record rec;
    pthread_mutex_lock(&g_lock);
    build(&rec, fields_fmt, &ap);
    char *line = render(format, level, event, &rec);
    pthread_mutex_unlock(&g_lock);
    va_end(ap);
    sqlq_log_record_free(&rec);
    return line;
}

/* Hands a built record to the sink (or stderr) and frees it. Called with g_lock held. */
static void emit(sqlq_log_level level, const char *event, sqlq_log_record *rec)
{
    if (g_sink) {
        sqlq_buf text;
        sqlq_buf_init(&text, 1024 * 1024);
        if (sqlq_log_record_text(rec, &text) == SQLQ_OK)
            g_sink(g_sink_ctx, level, event, sqlq_buf_str(&text));
        sqlq_buf_free(&text);
    } else {
        char *line = render((sqlq_log_format)atomic_load(&g_format), level, event, rec);
        if (line) {
            fprintf(stderr, "%s\n", line);
            free(line);
        }
    }
}

void sqlq_log_write(sqlq_log_level level, const char *event, const char *fields_fmt, ...)
{
    if (!sqlq_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fields_fmt);
    sqlq_log_record rec;
    pthread_mutex_lock(&g_lock);
    build(&rec, fields_fmt, &ap);
    va_end(ap);
    emit(level, event, &rec);
    pthread_mutex_unlock(&g_lock);
    sqlq_log_record_free(&rec);
}

/* The fields, then err="<the error as sqlq_error_format writes it>" as the last field. */
void sqlq_log_write_error(sqlq_log_level level, const char *event, const sqlq_error *err,
                          const char *fields_fmt, ...)
{
    if (!sqlq_log_enabled(level))
        return;
    char msg[SQLQ_LOG_ERROR_TEXT];
    sqlq_error_format(err, msg, sizeof(msg));
    va_list ap;
    va_start(ap, fields_fmt);
    sqlq_log_record rec;
    pthread_mutex_lock(&g_lock);
    sqlq_result r = sqlq_log_record_format(&rec, fields_fmt, &ap);
    va_end(ap);
    if (r == SQLQ_OK && rec.n < SQLQ_LOG_MAX_FIELDS) {
        sqlq_log_field *f = &rec.fields[rec.n++];
        f->key = sqlq_slice_of("err");
        f->quoted = true;
        sqlq_buf_init(&f->value, sizeof(msg));
        if (sqlq_buf_adds(&f->value, msg) != SQLQ_OK) {
            sqlq_buf_free(&f->value);
            rec.n--;
        }
    }
    sqlq_log_record_each_value(&rec, redact);
    emit(level, event, &rec);
    pthread_mutex_unlock(&g_lock);
    sqlq_log_record_free(&rec);
}
