#include "poison.h"

#include "buf.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE ((size_t)4 * 1024 * 1024) /* an import line: 64 KiB text, JSON-escaped */
#define IMPORT_CHUNK 256
#define IMPORT_IN_FLIGHT 16
/* Stop looking once this many Get requests in a row returned only messages already seen. */
#define ALL_SEEN_ROUNDS 2

/* ---- messages this run holds hidden: id -> latest pop receipt ---- */

typedef struct held_entry {
    char *id;
    char *receipt;
    bool restore; /* make visible again at the end */
} held_entry;

typedef struct held_set {
    held_entry *slots;
    size_t cap, n;
} held_set;

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static sqlq_result held_grow(held_set *h)
{
    size_t cap = h->cap ? h->cap * 2 : 256;
    held_entry *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return SQLQ_E_NOMEM;
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->slots[i].id)
            continue;
        size_t j = hash(h->slots[i].id) & (cap - 1);
        while (slots[j].id)
            j = (j + 1) & (cap - 1);
        slots[j] = h->slots[i];
    }
    free(h->slots);
    h->slots = slots;
    h->cap = cap;
    return SQLQ_OK;
}

/* The entry for id, added when new (*added = true). NULL on OOM. */
static held_entry *held_get(held_set *h, const char *id, bool *added)
{
    *added = false;
    if ((h->n + 1) * 2 > h->cap && held_grow(h) != SQLQ_OK)
        return NULL;
    size_t j = hash(id) & (h->cap - 1);
    while (h->slots[j].id && strcmp(h->slots[j].id, id) != 0)
        j = (j + 1) & (h->cap - 1);
    if (!h->slots[j].id) {
        if (!(h->slots[j].id = strdup(id)))
            return NULL;
        h->n++;
        *added = true;
    }
    return &h->slots[j];
}

static void held_set_receipt(held_entry *e, const char *receipt, bool restore)
{
    free(e->receipt);
    e->receipt = receipt ? strdup(receipt) : NULL;
    e->restore = restore && e->receipt;
}

static void held_free(held_set *h)
{
    for (size_t i = 0; i < h->cap; i++) {
        free(h->slots[i].id);
        free(h->slots[i].receipt);
    }
    free(h->slots);
    memset(h, 0, sizeof(*h));
}

/* Messages we skipped or only looked at become visible again now, not in visibility_s. */
static void held_restore(sqlq_queue_client *c, const char *queue, held_set *h)
{
    for (size_t i = 0; i < h->cap; i++) {
        held_entry *e = &h->slots[i];
        if (!e->id || !e->restore)
            continue;
        sqlq_error err;
        sqlq_error_clear(&err);
        char *receipt = NULL;
        if (sqlq_queue_update_message(c, queue, e->id, e->receipt, 0, NULL, 0, false, &receipt,
                                      NULL, &err) != SQLQ_OK)
            SQLQ_DEBUG("poison.restore_failed", "queue=%s msg_id=%s err=\"%s\"", queue, e->id,
                       err.message);
        free(receipt);
        e->restore = false;
    }
}

/* ---- bodies and matching ---- */

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

static bool where_matches(const sqlq_requeue_options *o, const sqlq_message *m)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    bool hit = false;
    if (sqlq_codec_decode(o->encoding, m->text ? m->text : "", m->text_len, &body, NULL) ==
        SQLQ_OK) {
        json_t *root = json_loadb(sqlq_buf_str(&body), body.len, 0, NULL);
        json_t *v = json_object_get(root, o->where_field);
        if (json_is_string(v)) {
            hit = strcmp(json_string_value(v), o->where_value) == 0;
        } else if (v) {
            char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            hit = s && strcmp(s, o->where_value) == 0;
            free(s);
        }
        json_decref(root);
    }
    sqlq_buf_free(&body);
    return hit;
}

static bool matches(const sqlq_requeue_options *o, const sqlq_message *m)
{
    if (o->all)
        return true;
    for (size_t i = 0; i < o->nids; i++)
        if (strcmp(o->ids[i], m->id) == 0)
            return true;
    return o->where_field && where_matches(o, m);
}

/* ---- requeue ---- */

void sqlq_requeue_options_default(sqlq_requeue_options *o)
{
    memset(o, 0, sizeof(*o));
    o->visibility_s = 30;
    o->encoding = SQLQ_ENCODING_BASE64;
}

/* The bridge poisons a change as {"reason": "...", "message": M} (M the message it could not
 * deliver). Moving it back must put M, not the wrapper, or consumers would get a shape they do
 * not know. On success *out holds M's MessageText, encoded like the original. */
static bool bridge_original(const sqlq_message *m, sqlq_encoding enc, sqlq_buf *out)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    bool ok = false;
    if (m->text && sqlq_codec_decode(enc, m->text, m->text_len, &body, &err) == SQLQ_OK) {
        json_t *doc = json_loadb(sqlq_buf_str(&body), body.len, 0, NULL);
        json_t *inner = json_object_get(doc, "message");
        if (json_is_object(doc) && json_object_size(doc) == 2 &&
            json_is_string(json_object_get(doc, "reason")) &&
            (json_is_object(inner) || json_is_array(inner))) {
            char *text = json_dumps(inner, JSON_COMPACT);
            ok = text && sqlq_codec_encode(enc, text, strlen(text), out, &err) == SQLQ_OK;
            free(text);
        }
        json_decref(doc);
    }
    sqlq_buf_free(&body);
    return ok;
}

static sqlq_result put_verbatim(sqlq_queue_client *c, const char *queue, const sqlq_message *m,
                                sqlq_encoding enc, sqlq_error *err)
{
    sqlq_put_options po = {.verbatim = true};
    sqlq_buf original;
    sqlq_buf_init(&original, 0);
    const char *text = m->text ? m->text : "";
    size_t len = m->text_len;
    if (bridge_original(m, enc, &original)) {
        text = sqlq_buf_str(&original);
        len = original.len;
    }
    sqlq_result r = sqlq_queue_put(c, queue, text, len, &po, NULL, err);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        bool created;
        r = sqlq_queue_create(c, queue, &created, err);
        if (r == SQLQ_OK || r == SQLQ_E_CONFLICT) {
            sqlq_error_clear(err);
            r = sqlq_queue_put(c, queue, text, len, &po, NULL, err);
        }
    }
    sqlq_buf_free(&original);
    return r;
}

static bool stopping(const sqlq_stop *stop)
{
    return stop && *stop;
}

/* Move one message; false when it stays where it was. */
static bool move_one(sqlq_queue_client *c, const char *from, const char *to, const sqlq_message *m,
                     sqlq_encoding enc)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (put_verbatim(c, to, m, enc, &err) != SQLQ_OK) {
        SQLQ_WARN("poison.put_failed", "queue=%s msg_id=%s err=\"%s\" note=\"left in %s\"", to,
                  m->id, err.message, from);
        return false;
    }
    sqlq_error_clear(&err);
    if (sqlq_queue_delete_message(c, from, m->id, m->pop_receipt, &err) != SQLQ_OK)
        SQLQ_WARN("poison.delete_failed",
                  "queue=%s msg_id=%s err=\"%s\" note=\"copied to %s but still here: it may be "
                  "moved twice\"",
                  from, m->id, err.message, to);
    return true;
}

static bool requeue_done(const sqlq_requeue_options *o, const sqlq_poison_counts *n)
{
    if (stopping(o->stop) || (o->limit && n->moved >= o->limit))
        return true;
    return !o->all && !o->where_field && o->nids > 0 && n->matched >= o->nids;
}

sqlq_result sqlq_poison_requeue(sqlq_queue_client *c, const char *from, const char *to,
                                const sqlq_requeue_options *o, sqlq_poison_counts *out,
                                sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!o->all && o->nids == 0 && !o->where_field)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "choose --all, --id or --where");
    held_set held = {0};
    sqlq_result r = SQLQ_OK;
    for (int all_seen = 0; r == SQLQ_OK && all_seen < ALL_SEEN_ROUNDS && !requeue_done(o, out);) {
        sqlq_message_list list = {0};
        r = sqlq_queue_get(c, from, 32, o->visibility_s, &list, err);
        if (r != SQLQ_OK || list.count == 0) {
            sqlq_message_list_free(&list);
            break;
        }
        size_t fresh = 0;
        for (size_t i = 0; i < list.count; i++) {
            const sqlq_message *m = &list.items[i];
            bool added;
            held_entry *e = held_get(&held, m->id, &added);
            if (!e) {
                r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
                break;
            }
            fresh += added;
            bool take = added && !requeue_done(o, out) && matches(o, m);
            out->seen += added;
            out->matched += take;
            if (take && !o->dry_run && move_one(c, from, to, m, o->encoding)) {
                out->moved++;
                held_set_receipt(e, NULL, false);
            } else {
                out->moved += take && o->dry_run;
                out->failed += take && !o->dry_run;
                held_set_receipt(e, m->pop_receipt, true);
            }
        }
        sqlq_message_list_free(&list);
        all_seen = fresh ? 0 : all_seen + 1;
        if (o->progress)
            o->progress(o->progress_ctx, out->moved);
    }
    held_restore(c, from, &held);
    held_free(&held);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        r = SQLQ_OK; /* no poison queue: nothing to move */
    }
    return r;
}

/* ---- export ---- */

static void iso(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
}

static sqlq_result write_line(FILE *f, const sqlq_message *m, sqlq_encoding e, sqlq_error *err)
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
    if (!line)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot format message %s", m->id);
    int rc = fprintf(f, "%s\n", line);
    free(line);
    if (rc < 0)
        return sqlq_error_set(err, SQLQ_E_IO, false, "write: %s", strerror(errno));
    return SQLQ_OK;
}

static sqlq_result sync_file(FILE *f, sqlq_error *err)
{
    if (fflush(f) != 0 || (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS))
        return sqlq_error_set(err, SQLQ_E_IO, false, "flush/fsync of the export file: %s",
                              strerror(errno));
    return SQLQ_OK;
}

/* Write one batch; returns how many new messages it wrote, after syncing, deleting them. */
static sqlq_result export_batch(sqlq_queue_client *c, const char *queue, FILE *f,
                                const sqlq_export_options *o, sqlq_message_list *list,
                                held_set *held, sqlq_poison_counts *out, size_t *fresh,
                                sqlq_error *err)
{
    bool *take = calloc(list->count ? list->count : 1, sizeof(bool));
    if (!take)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < list->count; i++) {
        const sqlq_message *m = &list->items[i];
        bool added;
        held_entry *e = held_get(held, m->id, &added);
        if (!e) {
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
            break;
        }
        *fresh += added;
        if (added && !(o->limit && out->moved >= o->limit)) {
            out->seen++;
            r = write_line(f, m, o->encoding, err);
            take[i] = r == SQLQ_OK;
            out->moved += take[i];
        }
        /* Kept hidden only when it is about to be deleted; everything else is restored. */
        held_set_receipt(e, m->pop_receipt, !(o->delete_after && take[i]));
    }
    if (r == SQLQ_OK && o->delete_after)
        r = sync_file(f, err);
    for (size_t i = 0; r == SQLQ_OK && o->delete_after && i < list->count; i++) {
        if (!take[i])
            continue;
        const sqlq_message *m = &list->items[i];
        sqlq_error derr;
        sqlq_error_clear(&derr);
        if (sqlq_queue_delete_message(c, queue, m->id, m->pop_receipt, &derr) != SQLQ_OK) {
            out->failed++;
            SQLQ_WARN("poison.delete_failed",
                      "queue=%s msg_id=%s err=\"%s\" note=\"exported "
                      "but still in the queue\"",
                      queue, m->id, derr.message);
        }
    }
    free(take);
    return r;
}

sqlq_result sqlq_poison_export(sqlq_queue_client *c, const char *queue, FILE *f,
                               const sqlq_export_options *o, sqlq_poison_counts *out,
                               sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    held_set held = {0};
    sqlq_result r = SQLQ_OK;
    for (int all_seen = 0; r == SQLQ_OK && all_seen < ALL_SEEN_ROUNDS && !stopping(o->stop) &&
                           !(o->limit && out->moved >= o->limit);) {
        sqlq_message_list list = {0};
        r = sqlq_queue_get(c, queue, 32, o->visibility_s > 0 ? o->visibility_s : 30, &list, err);
        if (r == SQLQ_OK && list.count == 0) {
            sqlq_message_list_free(&list);
            break;
        }
        size_t fresh = 0;
        if (r == SQLQ_OK)
            r = export_batch(c, queue, f, o, &list, &held, out, &fresh, err);
        sqlq_message_list_free(&list);
        all_seen = fresh ? 0 : all_seen + 1;
        if (o->progress)
            o->progress(o->progress_ctx, out->moved);
    }
    if (r == SQLQ_OK)
        r = sync_file(f, err);
    held_restore(c, queue, &held);
    held_free(&held);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        r = SQLQ_OK;
    }
    return r;
}

/* ---- import ---- */

typedef struct import_chunk {
    sqlq_put_item items[IMPORT_CHUNK];
    char *owned[IMPORT_CHUNK];
    size_t n;
    bool verbatim; /* all items of a chunk are sent the same way */
} import_chunk;

static void chunk_clear(import_chunk *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        free(ch->owned[i]);
    ch->n = 0;
}

static sqlq_result chunk_send(sqlq_queue_client *c, const char *queue, import_chunk *ch,
                              sqlq_poison_counts *out, sqlq_error *err)
{
    if (ch->n == 0)
        return SQLQ_OK;
    sqlq_put_options po = {.verbatim = ch->verbatim};
    sqlq_result r = sqlq_queue_put_many(c, queue, ch->items, ch->n, IMPORT_IN_FLIGHT, &po);
    for (size_t i = 0; r == SQLQ_OK && i < ch->n; i++) {
        if (ch->items[i].result == SQLQ_OK) {
            out->moved++;
            continue;
        }
        out->failed++;
        if (err && err->code == SQLQ_OK)
            *err = ch->items[i].error;
    }
    chunk_clear(ch);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "import interrupted");
    return out->failed ? err->code : SQLQ_OK;
}

/* Parse one line into (text, verbatim). */
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
        *text = malloc(*text_len + 1);
        if (*text)
            memcpy(*text, json_string_value(v), *text_len + 1);
        else
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
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

sqlq_result sqlq_poison_import(sqlq_queue_client *c, FILE *f, const char *queue,
                               const sqlq_stop *stop, sqlq_poison_progress_fn progress,
                               void *progress_ctx, sqlq_poison_counts *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    bool created;
    sqlq_result r = sqlq_queue_create(c, queue, &created, err);
    if (r == SQLQ_E_CONFLICT) {
        sqlq_error_clear(err);
        r = SQLQ_OK;
    }
    import_chunk *ch = calloc(1, sizeof(*ch));
    if (r == SQLQ_OK && !ch)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_buf line;
    sqlq_buf_init(&line, MAX_LINE);
    unsigned long long lineno = 0;
    for (bool eof = false; r == SQLQ_OK && !eof && !stopping(stop);) {
        r = read_line(f, &line, &eof, err);
        lineno++;
        if (r != SQLQ_OK || line.len == 0 || strspn(sqlq_buf_str(&line), " \t\r") == line.len)
            continue;
        char *text = NULL;
        size_t len = 0;
        bool verbatim = true;
        r = parse_line(sqlq_buf_str(&line), line.len, lineno, &text, &len, &verbatim, err);
        if (r != SQLQ_OK)
            break;
        if (ch->n == IMPORT_CHUNK || (ch->n > 0 && ch->verbatim != verbatim)) {
            r = chunk_send(c, queue, ch, out, err);
            if (progress)
                progress(progress_ctx, out->moved);
        }
        out->seen++;
        ch->verbatim = verbatim;
        ch->owned[ch->n] = text;
        ch->items[ch->n] = (sqlq_put_item){.body = text, .len = len};
        ch->n++;
    }
    if (r == SQLQ_OK && ch)
        r = chunk_send(c, queue, ch, out, err);
    if (progress)
        progress(progress_ctx, out->moved);
    if (ch)
        chunk_clear(ch);
    free(ch);
    sqlq_buf_free(&line);
    return r;
}
