#include "poison.h"

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "poison_envelope.h"
#include "poison_match.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Stop looking once this many Get requests in a row returned only messages already seen. */
#define ALL_SEEN_ROUNDS 2
#define PEEK_MAX 32

/* ---- messages this run holds hidden: id -> latest pop receipt ---- */

typedef struct held_entry {
    char *id;
    char *receipt;
    int64_t until; /* visible again at (epoch s) */
    bool restore;  /* make visible again at the end */
} held_entry;

struct sqlq_poison_held {
    held_entry *slots;
    size_t cap, n;
};

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static sqlq_result held_grow(sqlq_poison_held *h)
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

static held_entry *held_find(const sqlq_poison_held *h, const char *id)
{
    if (!h->cap)
        return NULL;
    size_t j = hash(id) & (h->cap - 1);
    while (h->slots[j].id && strcmp(h->slots[j].id, id) != 0)
        j = (j + 1) & (h->cap - 1);
    return h->slots[j].id ? &h->slots[j] : NULL;
}

sqlq_poison_held *sqlq_poison_held_create(void)
{
    return calloc(1, sizeof(sqlq_poison_held));
}

sqlq_result sqlq_poison_held_put(sqlq_poison_held *h, const sqlq_message *m, bool restore,
                                 bool *out_added)
{
    *out_added = false;
    held_entry *e = held_find(h, m->id);
    if (!e) {
        if ((h->n + 1) * 2 > h->cap && held_grow(h) != SQLQ_OK)
            return SQLQ_E_NOMEM;
        size_t j = hash(m->id) & (h->cap - 1);
        while (h->slots[j].id)
            j = (j + 1) & (h->cap - 1);
        e = &h->slots[j];
        if (!(e->id = strdup(m->id)))
            return SQLQ_E_NOMEM;
        h->n++;
        *out_added = true;
    }
    free(e->receipt);
    e->receipt = m->pop_receipt ? strdup(m->pop_receipt) : NULL;
    e->until = m->next_visible_time;
    e->restore = restore && e->receipt;
    return SQLQ_OK;
}

void sqlq_poison_held_drop(sqlq_poison_held *h, const char *id)
{
    held_entry *e = held_find(h, id);
    if (e) {
        free(e->receipt);
        e->receipt = NULL;
        e->restore = false;
    }
}

static bool stopping(const sqlq_stop *stop)
{
    return stop && *stop;
}

void sqlq_poison_held_restore(sqlq_queue_client *c, const char *queue, sqlq_poison_held *h,
                              const sqlq_stop *stop, bool failed,
                              sqlq_poison_counts *out)
{
    uint64_t deadline = 0;
    for (size_t i = 0; h && i < h->cap; i++) {
        held_entry *e = &h->slots[i];
        if (!e->id || !e->restore)
            continue;
        if (stopping(stop) && !deadline)
            deadline = sqlq_clock_mono_ms() + SQLQ_POISON_RESTORE_ON_STOP_MS;
        sqlq_error err;
        sqlq_error_clear(&err);
        char *receipt = NULL;
        if (failed || (deadline && sqlq_clock_mono_ms() > deadline) ||
            sqlq_queue_update_message(c, queue, e->id, e->receipt, 0, NULL, 0, false, &receipt,
                                      NULL, &err) != SQLQ_OK) {
            SQLQ_DEBUG("poison.restore_failed", "queue=%s msg_id=%s err=\"%s\"", queue, e->id,
                       err.message);
            out->held++;
            if (e->until > out->held_until)
                out->held_until = e->until;
        }
        free(receipt);
        e->restore = false;
    }
}

void sqlq_poison_held_destroy(sqlq_poison_held *h)
{
    for (size_t i = 0; h && i < h->cap; i++) {
        free(h->slots[i].id);
        free(h->slots[i].receipt);
    }
    if (h)
        free(h->slots);
    free(h);
}

bool sqlq_poison_message_fault(const sqlq_error *e)
{
    return e->code == SQLQ_E_TOO_LARGE ||
           (e->code == SQLQ_E_HTTP && (e->http_status == 400 || e->http_status == 413));
}

/* ---- matching ---- */

static bool body_matches(const sqlq_requeue_options *o, const sqlq_message *m)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    bool decoded = sqlq_codec_decode(o->encoding, m->text ? m->text : "", m->text_len, &body,
                                     NULL) == SQLQ_OK;
    bool hit = true;
    if (o->where_field)
        hit = decoded && sqlq_poison_match_where(sqlq_buf_str(&body), body.len, o->where_field,
                                                 o->where_value);
    if (hit && o->contains) {
        const char *hay = decoded ? sqlq_buf_str(&body) : (m->text ? m->text : "");
        size_t len = decoded ? body.len : m->text_len;
        hit = memmem(hay, len, o->contains, strlen(o->contains)) != NULL;
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
    if (!o->where_field && !o->contains)
        return false;
    return body_matches(o, m);
}

const char *sqlq_poison_outcome_name(sqlq_poison_outcome o)
{
    switch (o) {
    case SQLQ_POISON_MOVED: return "moved";
    case SQLQ_POISON_WOULD_MOVE: return "would_move";
    case SQLQ_POISON_LEFT: return "left";
    case SQLQ_POISON_UNCERTAIN: return "uncertain";
    case SQLQ_POISON_NOT_DONE: return "not_done";
    case SQLQ_POISON_DELETED: return "deleted";
    }
    return "unknown";
}

static void tell(const sqlq_requeue_options *o, const char *id, sqlq_poison_outcome what,
                 const sqlq_error *err)
{
    if (o->outcome)
        o->outcome(o->outcome_ctx, id, what, err && err->code != SQLQ_OK ? err : NULL);
}

/* ---- requeue ---- */

void sqlq_requeue_options_default(sqlq_requeue_options *o)
{
    memset(o, 0, sizeof(*o));
    o->visibility_s = 30;
    o->encoding = SQLQ_ENCODING_BASE64;
}

/* What goes back: a sqlq envelope's message (its exact bytes, encoded like the original),
 * anything else byte-identical. */
static sqlq_result requeue_text(const sqlq_message *m, sqlq_encoding enc, sqlq_buf *out,
                                sqlq_error *err)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    const char *inner;
    size_t inner_len;
    sqlq_result r = SQLQ_OK;
    if (m->text && sqlq_codec_decode(enc, m->text, m->text_len, &body, NULL) == SQLQ_OK &&
        sqlq_poison_envelope_read(sqlq_buf_str(&body), body.len, &inner, &inner_len))
        r = sqlq_codec_encode(enc, inner, inner_len, out, err);
    else
        r = sqlq_buf_add(out, m->text ? m->text : "", m->text_len);
    sqlq_buf_free(&body);
    return r;
}

static sqlq_result put_back(sqlq_queue_client *c, const char *queue, const sqlq_message *m,
                            sqlq_encoding enc, sqlq_error *err)
{
    sqlq_put_options po = {.verbatim = true, .ttl_s = -1}; /* poison copies never expire */
    sqlq_buf text;
    sqlq_buf_init(&text, 0);
    sqlq_result r = requeue_text(m, enc, &text, err);
    if (r == SQLQ_OK)
        r = sqlq_queue_put(c, queue, sqlq_buf_str(&text), text.len, &po, NULL, err);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        bool created;
        r = sqlq_queue_create(c, queue, &created, err);
        if (r == SQLQ_OK || r == SQLQ_E_CONFLICT) {
            sqlq_error_clear(err);
            r = sqlq_queue_put(c, queue, sqlq_buf_str(&text), text.len, &po, NULL, err);
        }
    }
    sqlq_buf_free(&text);
    return r;
}

typedef enum { MOVED, LEFT, STOPPED } move_outcome;

/* Move one message. LEFT: the service refused this message (it stays, counted failed);
 * STOPPED: the service or the credential failed (err set; the run stops). */
static move_outcome move_one(sqlq_queue_client *c, const char *from, const char *to,
                             const sqlq_message *m, const sqlq_requeue_options *o,
                             sqlq_poison_counts *out, sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    if (put_back(c, to, m, o->encoding, &e) != SQLQ_OK) {
        SQLQ_WARN("poison.put_failed", "queue=%s msg_id=%s err=\"%s\" note=\"left in %s\"", to,
                  m->id, e.message, from);
        if (sqlq_poison_message_fault(&e)) {
            tell(o, m->id, SQLQ_POISON_LEFT, &e);
            return LEFT;
        }
        /* A put that timed out or was cancelled may have landed all the same. */
        bool maybe = e.transient || e.code == SQLQ_E_NETWORK || e.code == SQLQ_E_CANCELLED;
        out->uncertain += maybe;
        tell(o, m->id, maybe ? SQLQ_POISON_UNCERTAIN : SQLQ_POISON_NOT_DONE, &e);
        *err = e;
        return STOPPED;
    }
    sqlq_error_clear(&e);
    if (sqlq_queue_delete_message(c, from, m->id, m->pop_receipt, &e) == SQLQ_OK) {
        tell(o, m->id, SQLQ_POISON_MOVED, NULL);
        return MOVED;
    }
    SQLQ_WARN("poison.delete_failed",
              "queue=%s msg_id=%s err=\"%s\" note=\"copied to %s but still here: a rerun moves "
              "it again\"",
              from, m->id, e.message, to);
    out->uncertain++;
    tell(o, m->id, SQLQ_POISON_UNCERTAIN, &e);
    if (e.code == SQLQ_E_NOT_FOUND || e.code == SQLQ_E_POP_RECEIPT)
        return LEFT; /* our hold lapsed: someone else may hold it now */
    *err = e;
    return STOPPED;
}

/* Delete one message (sqlq_poison_delete): MOVED when deleted; LEFT when our hold lapsed (it
 * stays, counted failed); STOPPED when the service failed (err set). */
static move_outcome delete_one(sqlq_queue_client *c, const char *from, const sqlq_message *m,
                               const sqlq_requeue_options *o, sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_queue_delete_message(c, from, m->id, m->pop_receipt, &e) == SQLQ_OK) {
        tell(o, m->id, SQLQ_POISON_DELETED, NULL);
        return MOVED;
    }
    SQLQ_WARN("poison.delete_failed", "queue=%s msg_id=%s err=\"%s\"", from, m->id, e.message);
    bool lapsed = e.code == SQLQ_E_NOT_FOUND || e.code == SQLQ_E_POP_RECEIPT;
    tell(o, m->id, lapsed ? SQLQ_POISON_LEFT : SQLQ_POISON_NOT_DONE, &e);
    if (lapsed)
        return LEFT;
    *err = e;
    return STOPPED;
}

static bool requeue_done(const sqlq_requeue_options *o, const sqlq_poison_counts *n)
{
    if (stopping(o->stop) || (o->limit && n->moved >= o->limit))
        return true;
    return !o->all && !o->where_field && !o->contains && o->nids > 0 && n->matched >= o->nids;
}

/* Handle one received batch; *fresh counts messages not seen before. */
static sqlq_result requeue_batch(sqlq_queue_client *c, const char *from, const char *to,
                                 const sqlq_requeue_options *o, const sqlq_message_list *list,
                                 sqlq_poison_held *held, sqlq_poison_counts *out, size_t *fresh,
                                 sqlq_error *err)
{
    for (size_t i = 0; i < list->count; i++) {
        const sqlq_message *m = &list->items[i];
        bool added;
        if (sqlq_poison_held_put(held, m, true, &added) != SQLQ_OK)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        /* Arrivals do not keep the run going: it covers what was there when it started. */
        *fresh += added && m->insertion_time <= o->started;
        if (!added)
            continue;
        out->seen++;
        if (m->insertion_time > o->started) {
            out->arrived++; /* poisoned again (or new) while this run went: the next run's */
            continue;
        }
        if (requeue_done(o, out) || !matches(o, m))
            continue;
        out->matched++;
        if (o->dry_run) {
            out->moved++;
            tell(o, m->id, SQLQ_POISON_WOULD_MOVE, NULL);
            continue;
        }
        move_outcome mo = to ? move_one(c, from, to, m, o, out, err) : delete_one(c, from, m, o, err);
        out->moved += mo == MOVED;
        out->failed += mo == LEFT;
        if (mo != LEFT)
            sqlq_poison_held_drop(held, m->id);
        if (mo == STOPPED)
            return err->code;
    }
    return SQLQ_OK;
}

/* A dry run over a queue the peek covers: nothing is received, nothing changes. */
static sqlq_result requeue_peek(sqlq_queue_client *c, const char *from,
                                const sqlq_requeue_options *o, sqlq_poison_counts *out,
                                sqlq_error *err)
{
    sqlq_message_list list = {0};
    sqlq_result r = sqlq_queue_peek(c, from, PEEK_MAX, &list, err);
    for (size_t i = 0; r == SQLQ_OK && i < list.count; i++) {
        const sqlq_message *m = &list.items[i];
        out->seen++;
        if (m->insertion_time > o->started)
            out->arrived++;
        else if (!(o->limit && out->moved >= o->limit) && matches(o, m)) {
            out->matched++;
            out->moved++;
            tell(o, m->id, SQLQ_POISON_WOULD_MOVE, NULL);
        }
    }
    sqlq_message_list_free(&list);
    out->peeked = true;
    return r;
}

static void count_remaining(sqlq_queue_client *c, const char *from, sqlq_poison_counts *out)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    out->remaining = sqlq_queue_properties(c, from, &props, &err) == SQLQ_OK
                         ? props.approximate_count
                         : -1;
}

/* The insertion times the service reports are whole seconds: the run starts at the beginning
 * of the next second, so that everything inserted up to `started` was there before the run and
 * everything it puts or a consumer poisons again meanwhile is later. */
static int64_t start_second(const sqlq_stop *stop)
{
    int64_t now = (int64_t)time(NULL);
    while ((int64_t)time(NULL) == now && !stopping(stop)) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return now;
}

/* Requeue (to set) or delete (to NULL) what o selects. */
static sqlq_result poison_run(sqlq_queue_client *c, const char *from, const char *to,
                              const sqlq_requeue_options *o_in, sqlq_poison_counts *out,
                              sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    sqlq_requeue_options o = *o_in;
    /* Counted before the run's second starts: whatever it counts was inserted by `started`. */
    count_remaining(c, from, out);
    out->at_start = out->remaining;
    out->remaining = 0;
    if (!o.started)
        o.started = start_second(o.stop);
    out->started = o.started;
    if (!o.all && o.nids == 0 && !o.where_field && !o.contains)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "choose --all, --id or --where");
    if (o.dry_run && o.peek) {
        sqlq_result r = requeue_peek(c, from, &o, out, err);
        if (r == SQLQ_E_NOT_FOUND) {
            sqlq_error_clear(err);
            r = SQLQ_OK;
        }
        if (r == SQLQ_OK)
            count_remaining(c, from, out);
        return r;
    }
    sqlq_poison_held *held = sqlq_poison_held_create();
    sqlq_result r = held ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (int all_seen = 0; r == SQLQ_OK && all_seen < ALL_SEEN_ROUNDS && !requeue_done(&o, out);) {
        sqlq_message_list list = {0};
        r = sqlq_queue_get(c, from, 32, o.visibility_s, &list, err);
        size_t fresh = 0;
        if (r == SQLQ_OK && list.count > 0)
            r = requeue_batch(c, from, to, &o, &list, held, out, &fresh, err);
        bool empty = list.count == 0;
        sqlq_message_list_free(&list);
        if (empty)
            break;
        all_seen = fresh ? 0 : all_seen + 1;
        if (o.progress)
            o.progress(o.progress_ctx, out->moved);
    }
    out->interrupted = stopping(o.stop);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        r = SQLQ_OK; /* no poison queue: nothing to move */
    }
    sqlq_poison_held_restore(c, from, held, o.stop, r != SQLQ_OK, out);
    sqlq_poison_held_destroy(held);
    if (r == SQLQ_OK)
        count_remaining(c, from, out);
    else
        out->remaining = -1; /* the service is failing: asking again would only wait */
    return r;
}

sqlq_result sqlq_poison_requeue(sqlq_queue_client *c, const char *from, const char *to,
                                const sqlq_requeue_options *o, sqlq_poison_counts *out,
                                sqlq_error *err)
{
    return poison_run(c, from, to, o, out, err);
}

sqlq_result sqlq_poison_delete(sqlq_queue_client *c, const char *queue,
                               const sqlq_requeue_options *o, sqlq_poison_counts *out,
                               sqlq_error *err)
{
    return poison_run(c, queue, NULL, o, out, err);
}
