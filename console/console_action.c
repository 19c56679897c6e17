/* console_action: the poison actions the console runs for a POST: requeue and purge (a
 * selection of ids, every message that matches a filter, or all) and export, each through the
 * poison tools the CLI runs (queue/poison.h: put first, then delete), answering with the
 * counts and what became of each message. */
#include "console_internal.h"

#include "log.h"
#include "poison.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEEK_MAX 32

typedef struct action {
    sqlq_console *c;
    const char *queue;
    char poison[64];
    sqlq_requeue_options o;
    const char **ids;
    json_t *outcomes; /* [{id, outcome, error?}] */
} action;

static void on_outcome(void *ctx, const char *id, sqlq_poison_outcome what, const sqlq_error *err)
{
    action *a = ctx;
    json_t *o = json_pack("{s:s, s:s}", "id", id, "outcome", sqlq_poison_outcome_name(what));
    if (o && err)
        json_object_set_new(o, "error", console_error_json(err));
    json_array_append_new(a->outcomes, o);
}

/* The selection of the request: "all": true, "ids": [...], or "match": {contains, field,
 * value}. NULL when fine, else what is wrong. */
static const char *read_selection(action *a, json_t *req)
{
    json_t *ids = json_object_get(req, "ids");
    json_t *match = json_object_get(req, "match");
    bool all = json_is_true(json_object_get(req, "all"));
    if (all + (ids != NULL) + (match != NULL) != 1)
        return "choose exactly one of all, ids or match";
    a->o.all = all && !match;
    if (ids) {
        size_t n = json_array_size(ids);
        if (!json_is_array(ids) || n == 0 || n > 10000)
            return "ids: a non-empty array of message ids";
        a->ids = calloc(n, sizeof(*a->ids));
        if (!a->ids)
            return "out of memory";
        for (size_t i = 0; i < n; i++)
            if (!(a->ids[i] = json_string_value(json_array_get(ids, i))))
                return "ids: every id is a string";
        a->o.ids = a->ids;
        a->o.nids = n;
    }
    if (match) {
        const char *contains = json_string_value(json_object_get(match, "contains"));
        const char *field = json_string_value(json_object_get(match, "field"));
        a->o.contains = contains && *contains ? contains : NULL;
        a->o.where_field = field && *field ? field : NULL;
        a->o.where_value = json_string_value(json_object_get(match, "value"));
        if (a->o.where_field && !a->o.where_value)
            a->o.where_value = "";
        if (!a->o.contains && !a->o.where_field)
            return "match: give contains, or field and value";
    }
    return NULL;
}

/* A dry run peeks when the poison queue holds at most 32 (nothing changes), as the CLI's. */
static void dry_run_mode(sqlq_queue_client *q, action *a)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_queue_properties(q, a->poison, &props, &err);
    a->o.peek = r != SQLQ_OK || props.approximate_count <= PEEK_MAX;
}

static json_t *counts_json(const sqlq_poison_counts *n)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}", "seen",
                     (json_int_t)n->seen, "matched", (json_int_t)n->matched, "moved",
                     (json_int_t)n->moved, "failed", (json_int_t)n->failed, "arrived",
                     (json_int_t)n->arrived, "uncertain", (json_int_t)n->uncertain, "held",
                     (json_int_t)n->held, "remaining", (json_int_t)n->remaining, "peeked",
                     n->peeked, "interrupted", n->interrupted);
}

/* Ids asked for that the run did not meet. */
static json_t *not_found(const action *a)
{
    json_t *list = json_array();
    for (size_t i = 0; i < a->o.nids; i++) {
        bool met = false;
        size_t k;
        json_t *o;
        json_array_foreach(a->outcomes, k, o) {
            met = met || strcmp(json_string_value(json_object_get(o, "id")), a->ids[i]) == 0;
        }
        if (!met)
            json_array_append_new(list, json_string(a->ids[i]));
    }
    return list;
}

/* requeue (to the routed queue) or purge (delete): the run and its report. */
static void run_move(action *a, sqlq_queue_client *q, bool purge, console_reply *r)
{
    sqlq_poison_counts n = {.remaining = -1};
    sqlq_error err;
    sqlq_error_clear(&err);
    if (a->o.dry_run)
        dry_run_mode(q, a);
    sqlq_result res;
    bool cleared = purge && a->o.all && !a->o.dry_run;
    if (cleared) { /* `sqlq poison purge`: every message, at once */
        res = sqlq_queue_clear(q, a->poison, &err);
        if (res == SQLQ_E_NOT_FOUND)
            res = SQLQ_OK;
    } else if (purge) {
        res = sqlq_poison_delete(q, a->poison, &a->o, &n, &err);
    } else {
        res = sqlq_poison_requeue(q, a->poison, a->queue, &a->o, &n, &err);
    }
    SQLQ_INFO("console.action", "action=%s queue=%s dry_run=%s matched=%llu done=%llu result=%s",
              purge ? "purge" : "requeue", a->poison, a->o.dry_run ? "true" : "false", n.matched,
              n.moved, sqlq_strerror(res));
    json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:b, s:o, s:o, s:o, s:b}", "action",
                            purge ? "purge" : "requeue", "from", a->poison, "to",
                            purge ? "" : a->queue, "dry_run", a->o.dry_run, "ok", res == SQLQ_OK,
                            "counts", counts_json(&n), "outcomes", json_incref(a->outcomes),
                            "not_found", not_found(a), "cleared", cleared && res == SQLQ_OK);
    if (doc && res != SQLQ_OK)
        json_object_set_new(doc, "error", console_error_json(&err));
    console_reply_json(r, MHD_HTTP_OK, doc);
}

static bool line_selected(const action *a, const char *line, size_t len)
{
    if (a->o.all)
        return true;
    json_t *o = json_loadb(line, len, 0, NULL);
    const char *id = json_string_value(json_object_get(o, "id"));
    bool hit = false;
    for (size_t i = 0; id && i < a->o.nids; i++)
        hit = hit || strcmp(a->ids[i], id) == 0;
    json_decref(o);
    return hit;
}

/* `sqlq poison export` into a temporary file (messages made visible again), then the lines
 * selected as the download. */
static void run_export(action *a, sqlq_queue_client *q, console_reply *r)
{
    if (a->o.contains || a->o.where_field) {
        console_reply_error(r, MHD_HTTP_BAD_REQUEST, "export takes all or ids");
        return;
    }
    FILE *f = tmpfile();
    sqlq_export_options eo = {.visibility_s = 30, .encoding = a->c->cfg.encoding,
                              .stop = a->c->cfg.stop};
    sqlq_poison_counts n = {.remaining = -1};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result res = f ? sqlq_poison_export(q, a->poison, f, &eo, &n, &err)
                        : sqlq_error_set(&err, SQLQ_E_IO, false, "no temporary file");
    if (res == SQLQ_E_NOT_FOUND)
        res = SQLQ_OK;
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    if (f)
        rewind(f);
    while (res == SQLQ_OK && f && (len = getline(&line, &cap, f)) > 0)
        if (line_selected(a, line, (size_t)len) && sqlq_buf_add(&out, line, (size_t)len) != SQLQ_OK)
            res = sqlq_error_set(&err, SQLQ_E_NOMEM, false, "out of memory");
    free(line);
    if (f)
        fclose(f);
    if (res != SQLQ_OK) {
        sqlq_buf_free(&out);
        console_reply_json(r, MHD_HTTP_BAD_GATEWAY,
                           json_pack("{s:o}", "error", console_error_json(&err)));
        return;
    }
    SQLQ_INFO("console.action", "action=export queue=%s exported=%llu", a->poison, n.moved);
    r->status = MHD_HTTP_OK;
    r->type = "application/x-ndjson; charset=utf-8";
    r->disposition = "attachment; filename=\"poison-export.jsonl\"";
    r->body = sqlq_buf_take(&out, &r->len);
    if (!r->body)
        r->body = strdup(""), r->len = 0;
}

void console_action(sqlq_console *c, const char *name, const char *body, size_t len,
                    console_reply *r)
{
    bool requeue = strcmp(name, "requeue") == 0, purge = strcmp(name, "purge") == 0;
    bool export = strcmp(name, "export") == 0;
    if (!requeue && !purge && !export) {
        console_reply_error(r, MHD_HTTP_NOT_FOUND, "no such action: requeue, purge or export");
        return;
    }
    json_t *req = json_loadb(body, len, 0, NULL);
    action a = {.c = c, .outcomes = json_array()};
    sqlq_requeue_options_default(&a.o);
    a.queue = json_string_value(json_object_get(req, "queue"));
    const char *why = NULL;
    if (!json_is_object(req))
        why = "the body must be a JSON object";
    else if (!console_routed(c, a.queue) || !sqlq_queue_poison_name(a.queue, a.poison, sizeof(a.poison)))
        why = "queue: not a routed queue with a poison queue";
    else
        why = read_selection(&a, req);
    const char *confirm = json_string_value(json_object_get(req, "confirm"));
    a.o.dry_run = json_is_true(json_object_get(req, "dry_run"));
    if (!why && purge && !a.o.dry_run && (!confirm || strcmp(confirm, a.poison) != 0))
        why = "purge needs confirm: the poison queue's name, typed";
    sqlq_queue_client *q = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (why)
        console_reply_error(r, MHD_HTTP_BAD_REQUEST, "%s", why);
    else if (console_client(c, &q, &err) != SQLQ_OK)
        console_reply_json(r, MHD_HTTP_BAD_GATEWAY,
                           json_pack("{s:o}", "error", console_error_json(&err)));
    else {
        a.o.encoding = c->cfg.encoding;
        a.o.stop = c->cfg.stop;
        a.o.outcome = on_outcome;
        a.o.outcome_ctx = &a;
        if (export)
            run_export(&a, q, r);
        else
            run_move(&a, q, purge, r);
    }
    sqlq_queue_client_destroy(q);
    free(a.ids);
    json_decref(a.outcomes);
    json_decref(req);
}
