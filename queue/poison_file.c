/* poison_file: `sqlq poison export` and `import`: poison messages as JSON lines. */
#include "poison.h"

#include "buf.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE ((size_t)4 * 1024 * 1024) /* an import line: 64 KiB text, JSON-escaped */
#define IMPORT_CHUNK 256
#define IMPORT_IN_FLIGHT 16
#define ALL_SEEN_ROUNDS 2

static bool stopping(const sqlq_stop *stop)
{
    return stop && *stop;
}

json_t *sqlq_poison_body_json(sqlq_encoding e, const char *text, size_t len)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    json_t *j = NULL;
    if (sqlq_codec_decode(e, text ? text : "", len, &body, NULL) == SQLQ_OK) {
        j = json_stringn(sqlq_buf_str(&body), body.len);
        if (!j) {
            sqlq_buf b64;
            sqlq_buf_init(&b64, 0);
            if (sqlq_codec_encode(SQLQ_ENCODING_BASE64, body.data ? body.data : "", body.len, &b64,
                                  NULL) == SQLQ_OK ||
                b64.len > 0)
                j = json_pack("{s:s}", "$base64", sqlq_buf_str(&b64));
            sqlq_buf_free(&b64);
        }
    }
    sqlq_buf_free(&body);
    return j ? j : json_null();
}

/* ---- export ---- */

static void iso(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
}

static sqlq_result format_line(const sqlq_message *m, sqlq_encoding e, sqlq_buf *lines,
                               sqlq_error *err)
{
    char ins[32], exp[32];
    iso(m->insertion_time, ins, sizeof(ins));
    iso(m->expiration_time, exp, sizeof(exp));
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:s%, s:o}", "id", m->id, "insertion_time", ins,
                          "expiration_time", exp, "dequeue_count",
                          (json_int_t)(m->dequeue_count > 0 ? m->dequeue_count - 1 : 0), "text",
                          m->text ? m->text : "", m->text_len, "body",
                          sqlq_poison_body_json(e, m->text, m->text_len));
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    sqlq_result r = line ? sqlq_buf_adds(lines, line) : SQLQ_E_NOMEM;
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(lines, '\n');
    free(line);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot format message %s", m->id);
    return SQLQ_OK;
}

typedef struct export_file {
    FILE *f;
    off_t good; /* bytes of whole lines written and flushed */
    bool regular;
} export_file;

/* Write a batch of whole lines and flush (fsync with sync); on a write error the file is cut
 * back to its last whole line, so it never ends in a cut line. */
static sqlq_result write_lines(export_file *x, const sqlq_buf *lines, bool sync, sqlq_error *err)
{
    errno = 0;
    bool ok = fwrite(lines->data ? lines->data : "", 1, lines->len, x->f) == lines->len &&
              fflush(x->f) == 0;
    if (ok && sync && fsync(fileno(x->f)) != 0 && errno != EINVAL && errno != EROFS)
        ok = false;
    if (ok) {
        x->good += (off_t)lines->len;
        return SQLQ_OK;
    }
    int saved = errno;
    if (x->regular && ftruncate(fileno(x->f), x->good) == 0)
        (void)fseeko(x->f, x->good, SEEK_SET);
    clearerr(x->f);
    return sqlq_error_set(err, SQLQ_E_IO, false, "write to the export file: %s%s",
                          strerror(saved ? saved : EIO),
                          x->regular ? " (the file was cut back to its last whole line)" : "");
}

/* An exported message that was not deleted: counted as uncertain and named to the caller. */
static void kept(const sqlq_export_options *o, sqlq_poison_counts *out, const char *id,
                 bool maybe)
{
    out->uncertain++;
    if (o->kept)
        o->kept(o->kept_ctx, id, maybe);
}

/* Write one batch, then (delete_after) delete what it wrote. */
static sqlq_result export_batch(sqlq_queue_client *c, const char *queue, export_file *x,
                                const sqlq_export_options *o, const sqlq_message_list *list,
                                sqlq_poison_held *held, sqlq_poison_counts *out, size_t *fresh,
                                sqlq_error *err)
{
    bool *take = calloc(list->count ? list->count : 1, sizeof(bool));
    sqlq_buf lines;
    sqlq_buf_init(&lines, 0);
    sqlq_result r = take ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    unsigned long long n = 0;
    for (size_t i = 0; r == SQLQ_OK && i < list->count; i++) {
        const sqlq_message *m = &list->items[i];
        bool added;
        if (sqlq_poison_held_put(held, m, true, &added) != SQLQ_OK)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        *fresh += added;
        if (r == SQLQ_OK && added && !(o->limit && out->moved + n >= o->limit)) {
            out->seen++;
            r = format_line(m, o->encoding, &lines, err);
            take[i] = r == SQLQ_OK;
            n += take[i];
        }
    }
    if (r == SQLQ_OK)
        r = write_lines(x, &lines, o->delete_after, err);
    if (r == SQLQ_OK)
        out->moved += n;
    bool written = r == SQLQ_OK;
    for (size_t i = 0; written && o->delete_after && i < list->count; i++) {
        if (!take[i])
            continue;
        const sqlq_message *m = &list->items[i];
        if (r != SQLQ_OK || stopping(o->stop)) {
            kept(o, out, m->id, false); /* in the file, not deleted: still in the queue */
            continue;
        }
        sqlq_error derr;
        sqlq_error_clear(&derr);
        if (sqlq_queue_delete_message(c, queue, m->id, m->pop_receipt, &derr) == SQLQ_OK) {
            out->deleted++;
            sqlq_poison_held_drop(held, m->id);
            continue;
        }
        /* refused: still there; aborted, lost or not found: the delete may have been done */
        bool refused = derr.code == SQLQ_E_HTTP && derr.http_status != 404 &&
                       !derr.transient;
        kept(o, out, m->id, !refused);
        SQLQ_WARN("poison.delete_failed",
                  "queue=%s msg_id=%s err=\"%s\" note=\"exported, %s in the queue\"", queue,
                  m->id, derr.message, refused ? "still" : "maybe still");
        if (!sqlq_poison_message_fault(&derr) && derr.code != SQLQ_E_NOT_FOUND &&
            derr.code != SQLQ_E_POP_RECEIPT) {
            *err = derr;
            r = derr.code; /* the rest of the batch is not deleted, and is said so */
        }
    }
    sqlq_buf_free(&lines);
    free(take);
    return r;
}

sqlq_result sqlq_poison_export(sqlq_queue_client *c, const char *queue, FILE *f,
                               const sqlq_export_options *o, sqlq_poison_counts *out,
                               sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    out->remaining = -1;
    struct stat st;
    export_file x = {f, 0, fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)};
    if (x.regular)
        x.good = st.st_size;
    sqlq_poison_held *held = sqlq_poison_held_create();
    sqlq_result r = held ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (int all_seen = 0; r == SQLQ_OK && all_seen < ALL_SEEN_ROUNDS && !stopping(o->stop) &&
                           !(o->limit && out->moved >= o->limit);) {
        sqlq_message_list list = {0};
        r = sqlq_queue_get(c, queue, 32, o->visibility_s > 0 ? o->visibility_s : 30, &list, err);
        size_t fresh = 0;
        if (r == SQLQ_OK && list.count > 0)
            r = export_batch(c, queue, &x, o, &list, held, out, &fresh, err);
        bool empty = list.count == 0;
        sqlq_message_list_free(&list);
        if (empty)
            break;
        all_seen = fresh ? 0 : all_seen + 1;
        if (o->progress)
            o->progress(o->progress_ctx, out->moved);
    }
    out->interrupted = stopping(o->stop);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        r = SQLQ_OK;
    }
    /* After a write error the service is fine: what this run holds is made visible again. */
    bool outage = r != SQLQ_OK && r != SQLQ_E_IO;
    sqlq_poison_held_restore(c, queue, held, o->stop, outage, out);
    sqlq_poison_held_destroy(held);
    sqlq_queue_props props = {0};
    sqlq_error perr;
    sqlq_error_clear(&perr);
    if (!outage && sqlq_queue_properties(c, queue, &props, &perr) == SQLQ_OK)
        out->remaining = props.approximate_count;
    return r;
}

/* ---- import ---- */

typedef struct import_chunk {
    sqlq_put_item items[IMPORT_CHUNK];
    char *owned[IMPORT_CHUNK];
    unsigned long long line[IMPORT_CHUNK];
    size_t n;
    bool verbatim; /* all items of a chunk are sent the same way */
} import_chunk;

static void chunk_clear(import_chunk *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        free(ch->owned[i]);
    ch->n = 0;
}

/* Send a chunk. out->next_line moves past what is known to be in the queue; items cut short
 * by a stop count as uncertain (they may have arrived). */
static sqlq_result chunk_send(sqlq_queue_client *c, const char *queue, import_chunk *ch,
                              sqlq_poison_counts *out, sqlq_error *err)
{
    if (ch->n == 0)
        return SQLQ_OK;
    sqlq_put_options po = {.verbatim = ch->verbatim, .ttl_s = -1}; /* never expires */
    sqlq_result r = sqlq_queue_put_many(c, queue, ch->items, ch->n, IMPORT_IN_FLIGHT, &po);
    bool all_ok = true;
    for (size_t i = 0; i < ch->n; i++) {
        sqlq_result ir = ch->items[i].result;
        out->moved += ir == SQLQ_OK;
        out->uncertain += ir == SQLQ_E_CANCELLED;
        out->failed += ir != SQLQ_OK && ir != SQLQ_E_CANCELLED;
        if (ir != SQLQ_OK && ir != SQLQ_E_CANCELLED)
            SQLQ_WARN("poison.import_refused", "queue=%s line=%llu err=\"%s\" note=\"not imported\"",
                      queue, ch->line[i], ch->items[i].error.message);
        if (ir != SQLQ_OK && all_ok) {
            all_ok = false;
            out->next_line = ch->line[i];
            if (ir != SQLQ_E_CANCELLED && err && err->code == SQLQ_OK) {
                *err = ch->items[i].error;
                snprintf(err->message, sizeof(err->message), "line %llu: %.480s", ch->line[i],
                         ch->items[i].error.message);
                out->refused_line = ch->line[i];
            }
        }
    }
    if (all_ok)
        out->next_line = ch->line[ch->n - 1] + 1;
    chunk_clear(ch);
    if (r == SQLQ_E_CANCELLED)
        return SQLQ_OK; /* the caller sees the stop flag */
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "import stopped");
    return all_ok ? SQLQ_OK : err->code;
}

/* Parse one line into (text, verbatim); text NULL only checks it. */
static sqlq_result parse_line(const char *line, size_t len, unsigned long long lineno, char **text,
                              size_t *text_len, bool *verbatim, sqlq_error *err)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, 0, &je);
    json_t *t = json_object_get(o, "text");
    json_t *b = json_object_get(o, "body");
    sqlq_result r = SQLQ_OK;
    if (json_is_string(t) || json_is_string(b)) {
        json_t *v = json_is_string(t) ? t : b;
        *verbatim = json_is_string(t);
        *text_len = json_string_length(v);
        if (text && !(*text = malloc(*text_len + 1)))
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        else if (text)
            memcpy(*text, json_string_value(v), *text_len + 1);
    } else {
        r = sqlq_error_set(
            err, SQLQ_E_PARSE, false,
            "line %llu: expected a JSON object with a \"text\" (or \"body\") string%s%s", lineno,
            o ? "" : ": ", o ? "" : je.text);
    }
    json_decref(o);
    return r;
}

static sqlq_result read_line(FILE *f, sqlq_buf *line, bool *eof, sqlq_error *err)
{
    sqlq_buf_reset(line);
    int ch;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (sqlq_buf_addc(line, (char)ch) != SQLQ_OK)
            return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false, "import line over %zu bytes",
                                  MAX_LINE);
    }
    *eof = ch == EOF;
    if (ferror(f))
        return sqlq_error_set(err, SQLQ_E_IO, false, "read: %s", strerror(errno));
    return SQLQ_OK;
}

/* The next line with content: *out / *out_len without a leading byte order mark. */
static sqlq_result next_line(FILE *f, sqlq_buf *line, unsigned long long *lineno, bool *eof,
                             const char **out, size_t *out_len, sqlq_error *err)
{
    *out = NULL;
    while (!*eof) {
        sqlq_result r = read_line(f, line, eof, err);
        ++*lineno;
        if (r != SQLQ_OK)
            return sqlq_error_set(err, r, false, "line %llu: %s", *lineno, err->message);
        const char *s = sqlq_buf_str(line);
        size_t n = line->len;
        if (*lineno == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
            s += 3;
            n -= 3;
        }
        if (n > 0 && strspn(s, " \t\r") != n) {
            *out = s;
            *out_len = n;
            return SQLQ_OK;
        }
    }
    return SQLQ_OK;
}

/* Whether the queue service would take a line's text as it will be sent: at most 64 KiB once
 * encoded, and (sent as it is) characters XML can carry. */
static sqlq_result check_sendable(const char *text, size_t len, bool verbatim, sqlq_encoding enc,
                                  unsigned long long lineno, sqlq_error *err)
{
    sqlq_buf sent;
    sqlq_buf_init(&sent, 0);
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_codec_encode(verbatim ? SQLQ_ENCODING_PLAIN : enc, text, len, &sent, &e);
    sqlq_buf_free(&sent);
    if (r == SQLQ_OK)
        return SQLQ_OK;
    return sqlq_error_set(err, r, false, "line %llu: the queue service would refuse its %s: %s",
                          lineno, verbatim ? "\"text\"" : "\"body\"", e.message);
}

/* The first pass: every line is checked before anything is put: its shape, and that the
 * service would take its text. */
static sqlq_result import_check(FILE *f, sqlq_encoding enc, sqlq_poison_counts *out,
                                sqlq_error *err)
{
    sqlq_buf line;
    sqlq_buf_init(&line, MAX_LINE);
    unsigned long long lineno = 0;
    sqlq_result r = SQLQ_OK;
    for (bool eof = false; r == SQLQ_OK && !eof;) {
        const char *s;
        size_t n, len;
        bool verbatim;
        char *text = NULL;
        r = next_line(f, &line, &lineno, &eof, &s, &n, err);
        if (r == SQLQ_OK && s)
            r = parse_line(s, n, lineno, &text, &len, &verbatim, err);
        if (r == SQLQ_OK && s)
            r = check_sendable(text, len, verbatim, enc, lineno, err);
        free(text);
        out->seen += r == SQLQ_OK && s;
    }
    sqlq_buf_free(&line);
    if (r == SQLQ_OK && fseeko(f, 0, SEEK_SET) != 0)
        r = sqlq_error_set(err, SQLQ_E_IO, false, "cannot read the file again: %s",
                           strerror(errno));
    return r;
}

static sqlq_result import_lines(sqlq_queue_client *c, FILE *f, const char *queue,
                                const sqlq_stop *stop, sqlq_poison_progress_fn progress,
                                void *progress_ctx, import_chunk *ch, sqlq_poison_counts *out,
                                sqlq_error *err)
{
    sqlq_buf line;
    sqlq_buf_init(&line, MAX_LINE);
    unsigned long long lineno = 0;
    sqlq_result r = SQLQ_OK;
    for (bool eof = false; r == SQLQ_OK && !eof && !stopping(stop);) {
        const char *s;
        size_t n, len = 0;
        char *text = NULL;
        bool verbatim = true;
        r = next_line(f, &line, &lineno, &eof, &s, &n, err);
        if (r != SQLQ_OK || !s)
            continue;
        r = parse_line(s, n, lineno, &text, &len, &verbatim, err);
        if (r == SQLQ_OK && (ch->n == IMPORT_CHUNK || (ch->n > 0 && ch->verbatim != verbatim))) {
            r = chunk_send(c, queue, ch, out, err);
            if (progress)
                progress(progress_ctx, out->moved);
        }
        if (r != SQLQ_OK || stopping(stop)) {
            free(text);
            break;
        }
        ch->verbatim = verbatim;
        ch->owned[ch->n] = text;
        ch->line[ch->n] = lineno;
        ch->items[ch->n] = (sqlq_put_item){.body = text, .len = len};
        ch->n++;
    }
    if (r == SQLQ_OK && !stopping(stop))
        r = chunk_send(c, queue, ch, out, err);
    sqlq_buf_free(&line);
    return r;
}

/* A pipe cannot be read twice: its content in a temporary file (the caller closes it). */
static FILE *seekable(FILE *f, FILE **tmp, sqlq_error *err)
{
    *tmp = NULL;
    if (fseeko(f, 0, SEEK_CUR) == 0)
        return f;
    FILE *t = tmpfile();
    char chunk[65536];
    size_t got;
    bool ok = t != NULL;
    while (ok && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        ok = fwrite(chunk, 1, got, t) == got;
    if (!ok || ferror(f) || fflush(t) != 0 || fseeko(t, 0, SEEK_SET) != 0) {
        sqlq_error_set(err, SQLQ_E_IO, false, "cannot keep the input for checking: %s",
                       strerror(errno));
        if (t)
            fclose(t);
        return NULL;
    }
    *tmp = t;
    return t;
}

sqlq_result sqlq_poison_import(sqlq_queue_client *c, FILE *in, const char *queue,
                               const sqlq_stop *stop, sqlq_poison_progress_fn progress,
                               void *progress_ctx, sqlq_poison_counts *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    out->remaining = -1;
    out->next_line = 1;
    FILE *tmp;
    FILE *f = seekable(in, &tmp, err);
    sqlq_result r = f ? import_check(f, sqlq_queue_client_encoding(c), out, err) : SQLQ_E_IO;
    if (r != SQLQ_OK && tmp)
        fclose(tmp);
    if (r != SQLQ_OK)
        return r;
    bool created;
    r = sqlq_queue_create(c, queue, &created, err);
    if (r == SQLQ_E_CONFLICT) {
        sqlq_error_clear(err);
        r = SQLQ_OK;
    }
    import_chunk *ch = calloc(1, sizeof(*ch));
    if (r == SQLQ_OK && !ch)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK)
        r = import_lines(c, f, queue, stop, progress, progress_ctx, ch, out, err);
    if (progress)
        progress(progress_ctx, out->moved);
    if (ch)
        chunk_clear(ch);
    free(ch);
    if (tmp)
        fclose(tmp);
    out->interrupted = stopping(stop);
    if (r == SQLQ_OK && !out->interrupted && out->moved == out->seen)
        out->next_line = 0; /* every line is in the queue */
    return r;
}
