#include "abandoned.h"

#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* An entry no message claimed for this long is dropped when the file is next opened, even when
 * its message never expires (TTL -1): that message was consumed somewhere else. */
#define MAX_AGE_S (30 * 86400)
#define MAX_ID 255

/* File lines: "a ID DEQUEUE_COUNT EXPIRES RECORDED\n" (given back) and "f ID\n" (forgotten). */

typedef struct entry {
    char *id;
    long dq;
    int64_t expires, recorded;
} entry;

struct sqlq_abandoned {
    pthread_mutex_t mu;
    char *path;
    char *lock_path;
    entry *e;
    size_t n, cap;
    dev_t dev;
    ino_t ino;
    off_t offset; /* bytes of the file read so far */
};

void sqlq_abandoned_path(const char *dir, const char *endpoint, const char *queue, char *out,
                         size_t out_size)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = endpoint ? endpoint : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(out, out_size, "%s/abandoned-%s-%016llx", dir, queue, (unsigned long long)h);
}

static bool id_valid(const char *id, size_t len)
{
    if (len == 0 || len > MAX_ID)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_", id[i]))
            return false;
    return true;
}

static void drop_entry(sqlq_abandoned *a, size_t i)
{
    free(a->e[i].id);
    a->e[i] = a->e[--a->n];
}

static void forget_in_memory(sqlq_abandoned *a, const char *id)
{
    for (size_t i = a->n; i-- > 0;)
        if (strcmp(a->e[i].id, id) == 0)
            drop_entry(a, i);
}

static void add_in_memory(sqlq_abandoned *a, const char *id, long dq, int64_t expires,
                          int64_t recorded)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->e[i].dq == dq && strcmp(a->e[i].id, id) == 0)
            return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        entry *grown = realloc(a->e, cap * sizeof(*grown));
        if (!grown)
            return; /* out of memory: this dequeue will count, as without a record */
        a->e = grown;
        a->cap = cap;
    }
    char *copy = strdup(id);
    if (copy)
        a->e[a->n++] = (entry){copy, dq, expires, recorded};
}

/* One line (without its newline); malformed lines are ignored. */
static void apply_line(sqlq_abandoned *a, char *line)
{
    char *save = NULL;
    char *kind = strtok_r(line, " ", &save), *id = strtok_r(NULL, " ", &save);
    if (!kind || !id || !id_valid(id, strlen(id)))
        return;
    if (strcmp(kind, "f") == 0) {
        forget_in_memory(a, id);
        return;
    }
    long long v[3];
    for (int i = 0; i < 3; i++) {
        char *tok = strtok_r(NULL, " ", &save), *end = NULL;
        errno = 0;
        v[i] = tok ? strtoll(tok, &end, 10) : 0;
        if (!tok || errno != 0 || *end != '\0' || v[i] < 0)
            return;
    }
    if (strcmp(kind, "a") == 0 && v[0] >= 1 && v[0] <= 2147483647LL)
        add_in_memory(a, id, (long)v[0], v[1], v[2]);
}

/* Read what the file holds beyond what was read (all of it when it was replaced). */
static void refresh(sqlq_abandoned *a)
{
    struct stat st;
    if (stat(a->path, &st) != 0)
        return;
    if (st.st_dev != a->dev || st.st_ino != a->ino || st.st_size < a->offset) {
        while (a->n > 0)
            drop_entry(a, a->n - 1);
        a->dev = st.st_dev;
        a->ino = st.st_ino;
        a->offset = 0;
    }
    if (st.st_size == a->offset)
        return;
    int fd = open(a->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    size_t have = 0;
    off_t at = a->offset;
    ssize_t got;
    while ((got = pread(fd, buf + have, sizeof(buf) - 1 - have, at + (off_t)have)) > 0) {
        have += (size_t)got;
        buf[have] = '\0';
        char *nl, *line = buf;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            *nl = '\0';
            apply_line(a, line);
            line = nl + 1;
        }
        size_t used = (size_t)(line - buf);
        if (used == 0 && have == sizeof(buf) - 1)
            used = have; /* a line longer than any valid one: skip it */
        at += (off_t)used;
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    close(fd);
    a->offset = at;
}

/* Append one line (O_APPEND: whole lines never interleave), under a shared lock that a
 * rewrite takes exclusively. sync: flush it to disk before returning. */
static sqlq_result append(sqlq_abandoned *a, const char *line, bool sync, sqlq_error *err)
{
    int lk = open(a->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lk >= 0)
        flock(lk, LOCK_SH);
    int fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    size_t len = strlen(line);
    bool ok = fd >= 0 && write(fd, line, len) == (ssize_t)len && (!sync || fdatasync(fd) == 0);
    int saved = errno;
    if (fd >= 0)
        close(fd);
    if (lk >= 0)
        close(lk);
    if (!ok)
        return sqlq_error_set(err, SQLQ_E_IO, false, "%s: %s", a->path, strerror(saved));
    return SQLQ_OK;
}

/* Rewrite the file with the live entries only, when some are stale. */
static void compact(sqlq_abandoned *a, int64_t now)
{
    size_t before = a->n;
    for (size_t i = a->n; i-- > 0;)
        if ((a->e[i].expires > 0 && a->e[i].expires < now) || now - a->e[i].recorded > MAX_AGE_S)
            drop_entry(a, i);
    struct stat st;
    if (before == a->n && (stat(a->path, &st) != 0 || st.st_size < 65536))
        return;
    sqlq_buf text, tmp;
    sqlq_buf_init(&text, 0);
    sqlq_buf_init(&tmp, 0);
    sqlq_result r = sqlq_buf_printf(&tmp, "%s.tmp", a->path);
    for (size_t i = 0; r == SQLQ_OK && i < a->n; i++)
        r = sqlq_buf_printf(&text, "a %s %ld %lld %lld\n", a->e[i].id, a->e[i].dq,
                            (long long)a->e[i].expires, (long long)a->e[i].recorded);
    int fd = r == SQLQ_OK ? open(sqlq_buf_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                          : -1;
    bool ok = fd >= 0 && write(fd, sqlq_buf_str(&text), text.len) == (ssize_t)text.len &&
              fdatasync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (ok && rename(sqlq_buf_str(&tmp), a->path) == 0 && stat(a->path, &st) == 0) {
        a->dev = st.st_dev;
        a->ino = st.st_ino;
        a->offset = st.st_size;
    } else if (r == SQLQ_OK) {
        unlink(sqlq_buf_str(&tmp));
    }
    sqlq_buf_free(&text);
    sqlq_buf_free(&tmp);
}

sqlq_result sqlq_abandoned_open(const char *path, sqlq_abandoned **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_abandoned *a = calloc(1, sizeof(*a));
    size_t len = path ? strlen(path) : 0;
    if (!a || !(a->path = strdup(path ? path : "")) || !(a->lock_path = malloc(len + 6))) {
        sqlq_abandoned_close(a);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    snprintf(a->lock_path, len + 6, "%s.lock", a->path);
    pthread_mutex_init(&a->mu, NULL);
    int lk = open(a->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lk < 0) {
        int saved = errno;
        sqlq_abandoned_close(a);
        return sqlq_error_set(err, SQLQ_E_IO, false, "%s: %s", path, strerror(saved));
    }
    flock(lk, LOCK_EX);
    refresh(a);
    compact(a, (int64_t)time(NULL));
    close(lk);
    *out = a;
    return SQLQ_OK;
}

void sqlq_abandoned_close(sqlq_abandoned *a)
{
    if (!a)
        return;
    while (a->n > 0)
        drop_entry(a, a->n - 1);
    free(a->e);
    if (a->lock_path)
        pthread_mutex_destroy(&a->mu);
    free(a->lock_path);
    free(a->path);
    free(a);
}

sqlq_result sqlq_abandoned_record(sqlq_abandoned *a, const char *id, long dequeue_count,
                                  int64_t expires, sqlq_error *err)
{
    if (!a)
        return SQLQ_OK;
    if (!id || !id_valid(id, strlen(id)) || dequeue_count < 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "not a message id and dequeue count");
    char line[MAX_ID + 80];
    snprintf(line, sizeof(line), "a %s %ld %lld %lld\n", id, dequeue_count, (long long)expires,
             (long long)time(NULL));
    pthread_mutex_lock(&a->mu);
    sqlq_result r = append(a, line, true, err);
    refresh(a);
    pthread_mutex_unlock(&a->mu);
    return r;
}

long sqlq_abandoned_discount(sqlq_abandoned *a, const char *id, long dequeue_count)
{
    if (!a || !id)
        return 0;
    long n = 0;
    pthread_mutex_lock(&a->mu);
    refresh(a);
    for (size_t i = 0; i < a->n; i++)
        n += a->e[i].dq < dequeue_count && strcmp(a->e[i].id, id) == 0;
    pthread_mutex_unlock(&a->mu);
    return n;
}

void sqlq_abandoned_forget(sqlq_abandoned *a, const char *id)
{
    if (!a || !id || !id_valid(id, strlen(id)))
        return;
    pthread_mutex_lock(&a->mu);
    refresh(a);
    bool known = false;
    for (size_t i = 0; i < a->n && !known; i++)
        known = strcmp(a->e[i].id, id) == 0;
    if (known) {
        char line[MAX_ID + 8];
        snprintf(line, sizeof(line), "f %s\n", id);
        if (append(a, line, false, NULL) == SQLQ_OK)
            refresh(a);
        forget_in_memory(a, id);
    }
    pthread_mutex_unlock(&a->mu);
}
