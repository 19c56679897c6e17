/* console_pages: the JSON the console's pages read: the session (anti-CSRF token, routes,
 * read-only), the routes with the status report and why delivery is held back, the routed
 * queues' counts, and a poison queue's messages (a peek: nothing changes); and /metrics, the
 * routed queues' counts and reachability for Prometheus. */
#include "console_internal.h"

#include "buf.h"
#include "catalog.h"
#include "codec.h"
#include "log.h"
#include "metrics.h"
#include "poison.h"
#include "poison_envelope.h"
#include "poison_match.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PEEK_MAX 32
#define PREVIEW_BYTES 240

static json_t *routes_json(const sqlq_console *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->cfg.nroutes; i++)
        json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "table", c->routes[i].table,
                                           "queue", c->routes[i].queue, "bridge",
                                           c->routes[i].bridge));
    return a;
}

void console_api_session(sqlq_console *c, console_reply *r)
{
    console_reply_json(r, MHD_HTTP_OK,
                       json_pack("{s:b, s:s, s:o, s:b}", "read_only", c->cfg.read_only, "csrf",
                                 c->csrf, "routes", routes_json(c), "token", c->token != NULL));
}

static void iso(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
}

/* ---- routes ---- */

static void held(json_t *reasons, const char *kind, json_t *text)
{
    json_array_append_new(reasons, json_pack("{s:s, s:o}", "kind", kind, "text", text));
}

/* Open transactions that hold committed changes back (PostgreSQL), in words. */
static void held_by_writers(json_t *reasons, const json_t *b)
{
    json_t *writers = json_object_get(b, "blocking_transactions");
    size_t i;
    json_t *w;
    json_array_foreach(writers, i, w) {
        const char *gid = json_string_value(json_object_get(w, "gid"));
        const char *app = json_string_value(json_object_get(w, "application_name"));
        char who[300];
        if (gid)
            snprintf(who, sizeof(who), "prepared transaction '%s'", gid);
        else
            snprintf(who, sizeof(who), "pid %lld (application_name '%s')",
                     (long long)json_integer_value(json_object_get(w, "pid")), app ? app : "");
        held(reasons, "open_transaction",
             json_sprintf("%lld committed change(s) wait for an open transaction that wrote the "
                          "change log: %s, database %s, state %s, open %llds",
                          (long long)json_integer_value(json_object_get(b, "held_back")), who,
                          json_string_value(json_object_get(w, "database")),
                          json_string_value(json_object_get(w, "state")),
                          (long long)json_integer_value(json_object_get(w, "age_s"))));
    }
}

typedef struct errors {
    json_t *list; /* [{what, error}] */
} errors;

static void on_error(void *ctx, const char *what, const sqlq_error *err)
{
    errors *e = ctx;
    json_array_append_new(e->list, json_pack("{s:s, s:o}", "what", what, "error",
                                             console_error_json(err)));
}

/* The status report of the database (connecting first when needed). NULL with *why set. */
static json_t *read_report(sqlq_console *c, json_t *errs, json_t **why)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (!c->cfg.db) {
        *why = json_string("no database configured (db, SQLQ_DB_CONNECTION)");
        return NULL;
    }
    if (!c->db && (sqlq_db_connect(c->cfg.db, &c->db, &err) != SQLQ_OK ||
                   sqlq_status_report_create(c->db, true, &c->report, &err) != SQLQ_OK)) {
        sqlq_db_close(c->db);
        c->db = NULL;
        *why = console_error_json(&err);
        return NULL;
    }
    errors e = {errs};
    sqlq_status_options o = {.on_error = on_error, .error_ctx = &e};
    json_t *doc = NULL;
    bool failed = false;
    if (sqlq_status_report_read(c->report, &o, &doc, &failed, &err) != SQLQ_OK) {
        *why = console_error_json(&err);
        return NULL;
    }
    if (failed && json_array_size(json_object_get(doc, "tables")) == 0) {
        /* nothing could be read: the connection may be gone; a new one next time */
        sqlq_status_report_destroy(c->report);
        sqlq_db_close(c->db);
        c->report = NULL;
        c->db = NULL;
    }
    return doc;
}

static json_t *find_bridge(const json_t *doc, const char *table_key, const char *bridge,
                           const char **source)
{
    size_t i, j;
    json_t *t, *b;
    json_array_foreach(json_object_get(doc, "tables"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "table")), table_key) != 0)
            continue;
        *source = json_string_value(json_object_get(t, "source"));
        json_array_foreach(json_object_get(t, "bridges"), j, b) {
            if (strcmp(json_string_value(json_object_get(b, "bridge")), bridge) == 0)
                return b;
        }
        return NULL;
    }
    json_array_foreach(json_object_get(doc, "cursor_sources"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "table")), table_key) == 0 &&
            strcmp(json_string_value(json_object_get(t, "bridge")), bridge) == 0) {
            *source = "cursor";
            return t;
        }
    }
    return NULL;
}

/* Whether the route's queue answers with the console's credential: a refused credential or
 * an unreachable service holds delivery back as much as the database does. */
static void probe_queue(sqlq_queue_client *q, const char *queue, json_t *reasons)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = q ? sqlq_queue_properties(q, queue, &props, &err) : SQLQ_E_NETWORK;
    if (r == SQLQ_OK || r == SQLQ_E_NOT_FOUND)
        return;
    bool refused = err.http_status == 401 || err.http_status == 403;
    held(reasons, refused ? "credential_refused" : "queue_outage", console_error_json(&err));
}

static json_t *route_json(sqlq_console *c, const sqlq_console_route *rt, const json_t *doc,
                          sqlq_queue_client *q)
{
    json_t *reasons = json_array();
    json_t *o = json_pack("{s:s, s:s, s:s, s:o}", "table", rt->table, "queue", rt->queue,
                          "bridge", rt->bridge, "held", reasons);
    char key[SQLQ_TABLE_KEY_MAX];
    sqlq_error err;
    sqlq_error_clear(&err);
    if (doc && c->db && sqlq_status_table_key(c->db, rt->table, key, sizeof(key), &err) != SQLQ_OK)
        held(reasons, "not_set_up", console_error_json(&err));
    const char *source = NULL;
    json_t *b = doc && c->db && !err.code ? find_bridge(doc, key, rt->bridge, &source) : NULL;
    if (b) {
        json_object_set_new(o, "source", json_string(source));
        json_object_set(o, "status", b);
        /* a stopped capture's reason names the kind (retention_overrun, table_key_changed…) */
        const char *stopped = json_string_value(json_object_get(b, "stopped"));
        if (json_object_get(b, "error"))
            held(reasons, stopped ? stopped : "status", json_incref(json_object_get(b, "error")));
        held_by_writers(reasons, b);
    } else if (doc && c->db && !err.code) {
        held(reasons, "no_bridge",
             json_sprintf("no bridge named %s has started on table %s yet (or the table is not "
                          "set up: sqlq setup)",
                          rt->bridge, rt->table));
    }
    probe_queue(q, rt->queue, reasons);
    return o;
}

void console_api_routes(sqlq_console *c, console_reply *r)
{
    json_t *errs = json_array();
    json_t *why = NULL;
    pthread_mutex_lock(&c->db_lock);
    json_t *doc = read_report(c, errs, &why);
    sqlq_queue_client *q = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (console_client(c, &q, &err) != SQLQ_OK)
        q = NULL;
    json_t *routes = json_array();
    for (size_t i = 0; i < c->cfg.nroutes; i++)
        json_array_append_new(routes, route_json(c, &c->routes[i], doc, q));
    pthread_mutex_unlock(&c->db_lock);
    sqlq_queue_client_destroy(q);
    char now[32];
    iso((int64_t)time(NULL), now, sizeof(now));
    json_t *out = json_pack("{s:o, s:o, s:s}", "routes", routes, "errors", errs, "read_at", now);
    if (out && why)
        json_object_set_new(out, "database_error", why);
    else
        json_decref(why);
    json_decref(doc);
    console_reply_json(r, MHD_HTTP_OK, out);
}

/* ---- queues ---- */

static json_t *count_json(sqlq_queue_client *q, const char *queue)
{
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_queue_properties(q, queue, &props, &err);
    if (r == SQLQ_OK)
        return json_pack("{s:s, s:I}", "name", queue, "count", (json_int_t)props.approximate_count);
    if (r == SQLQ_E_NOT_FOUND)
        return json_pack("{s:s, s:i, s:b}", "name", queue, "count", 0, "missing", 1);
    return json_pack("{s:s, s:o}", "name", queue, "error", console_error_json(&err));
}

void console_api_queues(sqlq_console *c, console_reply *r)
{
    sqlq_queue_client *q = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (console_client(c, &q, &err) != SQLQ_OK) {
        console_reply_json(r, MHD_HTTP_BAD_GATEWAY,
                           json_pack("{s:o}", "error", console_error_json(&err)));
        return;
    }
    json_t *list = json_array();
    for (size_t i = 0; i < c->cfg.nroutes; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || strcmp(c->routes[j].queue, c->routes[i].queue) == 0;
        char poison[64];
        if (seen || !sqlq_queue_poison_name(c->routes[i].queue, poison, sizeof(poison)))
            continue;
        json_array_append_new(list, json_pack("{s:o, s:o}", "queue",
                                              count_json(q, c->routes[i].queue), "poison",
                                              count_json(q, poison)));
    }
    sqlq_queue_client_destroy(q);
    console_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "queues", list));
}

/* ---- a poison queue's messages ---- */

/* The reason sqlq recorded: the poison envelope's "reason" (NULL when not an envelope). */
static json_t *envelope_reason(const char *body, size_t len)
{
    const char *msg;
    size_t msg_len;
    if (!sqlq_poison_envelope_read(body, len, &msg, &msg_len))
        return NULL;
    json_t *doc = json_loadb(body, len, JSON_DECODE_ANY, NULL);
    json_t *reason = json_incref(json_object_get(doc, "reason"));
    json_decref(doc);
    return reason;
}

/* A preview: the first bytes of the decoded body (the stored text when it does not decode),
 * cut on a character boundary; bytes that are not UTF-8 become U+FFFD. */
static json_t *preview(const char *s, size_t len)
{
    size_t n = len < PREVIEW_BYTES ? len : PREVIEW_BYTES;
    while (n > 0 && n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        size_t k = ch < 0x80 ? 1 : (ch >> 5) == 6 ? 2 : (ch >> 4) == 14 ? 3 : (ch >> 3) == 30 ? 4 : 0;
        json_t *t = k && i + k <= n ? json_stringn(s + i, k) : NULL;
        if (t) {
            r = sqlq_buf_add(&b, s + i, k);
            i += k - 1;
        } else {
            r = sqlq_buf_adds(&b, "\xEF\xBF\xBD"); /* U+FFFD */
        }
        json_decref(t);
    }
    json_t *out = json_stringn(sqlq_buf_str(&b), b.len);
    sqlq_buf_free(&b);
    return out ? out : json_string("");
}

static bool wanted(const console_filter *f, const char *body, size_t len, bool decoded)
{
    if (f->contains && !memmem(body, len, f->contains, strlen(f->contains)))
        return false;
    return !f->field ||
           (decoded && sqlq_poison_match_where(body, len, f->field, f->value ? f->value : ""));
}

static json_t *message_json(sqlq_encoding e, const sqlq_message *m, const console_filter *f)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    bool decoded = sqlq_codec_decode(e, m->text ? m->text : "", m->text_len, &body, NULL) == SQLQ_OK;
    const char *b = decoded ? sqlq_buf_str(&body) : (m->text ? m->text : "");
    size_t len = decoded ? body.len : m->text_len;
    json_t *o = NULL;
    if (wanted(f, b, len, decoded)) {
        char ins[32], exp[32];
        iso(m->insertion_time, ins, sizeof(ins));
        iso(m->expiration_time, exp, sizeof(exp));
        json_t *reason = decoded ? envelope_reason(b, len) : NULL;
        o = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:s%, s:o, s:b}", "id", m->id,
                      "insertion_time", ins, "expiration_time", exp, "dequeue_count",
                      (json_int_t)m->dequeue_count, "reason", reason ? reason : json_null(),
                      "preview", preview(b, len), "text", m->text ? m->text : "", m->text_len,
                      "body", sqlq_poison_body_json(e, m->text, m->text_len), "decoded", decoded);
    }
    sqlq_buf_free(&body);
    return o;
}

void console_api_poison(sqlq_console *c, const console_filter *f, console_reply *r)
{
    char poison[64];
    if (!console_routed(c, f->queue) || !sqlq_queue_poison_name(f->queue, poison, sizeof(poison))) {
        console_reply_error(r, MHD_HTTP_NOT_FOUND, "not a routed queue with a poison queue");
        return;
    }
    sqlq_queue_client *q = NULL;
    sqlq_message_list list = {0};
    sqlq_queue_props props = {.approximate_count = -1};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result res = console_client(c, &q, &err);
    if (res == SQLQ_OK)
        res = sqlq_queue_peek(q, poison, PEEK_MAX, &list, &err);
    if (res == SQLQ_OK && sqlq_queue_properties(q, poison, &props, &err) != SQLQ_OK)
        props.approximate_count = -1;
    sqlq_queue_client_destroy(q);
    if (res != SQLQ_OK && res != SQLQ_E_NOT_FOUND) {
        console_reply_json(r, MHD_HTTP_BAD_GATEWAY,
                           json_pack("{s:o}", "error", console_error_json(&err)));
        return;
    }
    json_t *messages = json_array();
    for (size_t i = 0; i < list.count; i++) {
        json_t *m = message_json(c->cfg.encoding, &list.items[i], f);
        if (m)
            json_array_append_new(messages, m);
    }
    console_reply_json(r, MHD_HTTP_OK,
                       json_pack("{s:s, s:s, s:I, s:i, s:b, s:o}", "queue", f->queue, "poison",
                                 poison, "approximate_count",
                                 (json_int_t)(res == SQLQ_E_NOT_FOUND ? 0 : props.approximate_count),
                                 "peeked", (int)list.count, "missing", res == SQLQ_E_NOT_FOUND,
                                 "messages", messages));
    sqlq_message_list_free(&list);
}

/* ---- /metrics: what the queue service says of the routed queues, for Prometheus ---- */

static void queue_gauges(sqlq_metrics *m, sqlq_queue_client *q, const char *queue, bool probe)
{
    sqlq_label l[] = {{"queue", queue}};
    sqlq_queue_props props = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_queue_properties(q, queue, &props, &err);
    if (r == SQLQ_OK || r == SQLQ_E_NOT_FOUND)
        sqlq_gauge_set(sqlq_metrics_gauge(m, "sqlq_queue_approximate_messages",
                                          "Approximate messages in a routed queue or its poison "
                                          "queue, as the queue service reports it.", l, 1),
                       r == SQLQ_OK ? (double)props.approximate_count : 0);
    if (!probe)
        return;
    bool refused = r != SQLQ_OK && (err.http_status == 401 || err.http_status == 403);
    sqlq_gauge_set(sqlq_metrics_gauge(m, "sqlq_queue_credential_refused",
                                      "1 when the queue service refuses the console's "
                                      "credential (the bridge's) for a routed queue.", l, 1),
                   refused);
    sqlq_gauge_set(sqlq_metrics_gauge(m, "sqlq_queue_unreachable",
                                      "1 when a routed queue cannot be read for another reason "
                                      "(unreachable, throttled, server errors).", l, 1),
                   r != SQLQ_OK && r != SQLQ_E_NOT_FOUND && !refused);
}

void console_api_metrics(sqlq_console *c, console_reply *r)
{
    sqlq_metrics *m = NULL;
    sqlq_queue_client *q = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    sqlq_result res = sqlq_metrics_create(&m);
    if (res == SQLQ_OK)
        res = console_client(c, &q, &err);
    for (size_t i = 0; res == SQLQ_OK && i < c->cfg.nroutes; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || strcmp(c->routes[j].queue, c->routes[i].queue) == 0;
        char poison[64];
        if (seen)
            continue;
        queue_gauges(m, q, c->routes[i].queue, true);
        if (sqlq_queue_poison_name(c->routes[i].queue, poison, sizeof(poison)))
            queue_gauges(m, q, poison, false);
    }
    if (res == SQLQ_OK)
        res = sqlq_metrics_render(m, &out);
    sqlq_queue_client_destroy(q);
    sqlq_metrics_destroy(m);
    if (res != SQLQ_OK) {
        sqlq_buf_free(&out);
        console_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics could not be read");
        return;
    }
    r->status = MHD_HTTP_OK;
    r->type = "text/plain; version=0.0.4; charset=utf-8";
    r->body = sqlq_buf_take(&out, &r->len);
}
