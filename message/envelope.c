/* envelope: writes every message shape sqlq publishes (docs/messages.md; see the header). */
#include "envelope.h"

#include "buf.h"
#include "envelope_text.h"
#include "json_text.h"
#include "poison_envelope.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const format_names[] = {"row", "batch", "functions"};
static const char *const oversize_names[] = {"truncate", "poison"};

bool sqlq_envelope_format_parse(const char *name, sqlq_envelope_format *out)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (sqlq_envelope_format)i;
            return true;
        }
    return false;
}

const char *sqlq_envelope_format_name(sqlq_envelope_format f)
{
    return (unsigned)f < 3 ? format_names[f] : "?";
}

bool sqlq_oversize_policy_parse(const char *name, sqlq_oversize_policy *out)
{
    for (int i = 0; name && i < 2; i++)
        if (strcmp(name, oversize_names[i]) == 0) {
            *out = (sqlq_oversize_policy)i;
            return true;
        }
    return false;
}

const char *sqlq_oversize_policy_name(sqlq_oversize_policy p)
{
    return (unsigned)p < 2 ? oversize_names[p] : "?";
}

void sqlq_envelope_config_default(sqlq_envelope_config *c)
{
    memset(c, 0, sizeof(*c));
    c->bridge_name = "default";
    c->format = SQLQ_FORMAT_ROW;
    c->oversize = SQLQ_OVERSIZE_TRUNCATE;
    c->encoding = SQLQ_ENCODING_BASE64;
    c->max_text = SQLQ_MESSAGE_MAX_TEXT;
}

/* Jansson writes control characters as \u001F; RFC 8785 and Python's json.dumps write
 * \u001f. Lower-case the hex digits of every \u escape (a "\\u" is an escaped backslash
 * followed by a letter u, and is left alone). */
static void lower_unicode_escapes(char *s)
{
    for (char *p = s; *p; p++) {
        if (*p != '\\')
            continue;
        p++;
        if (*p == '\0')
            return;
        for (int i = 1; *p == 'u' && i <= 4 && p[i]; i++)
            if (p[i] >= 'A' && p[i] <= 'F')
                p[i] = (char)(p[i] - 'A' + 'a');
    }
}

static EVP_MD *sha256_md;

static void sha256_fetch(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

/* SHA-256, fetched from the provider once (EVP_sha256() is looked up again at every
 * EVP_DigestInit_ex); EVP_sha256() itself if that fetch failed. */
static const EVP_MD *sha256(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sha256_fetch);
    return sha256_md ? sha256_md : EVP_sha256();
}

char *sqlq_envelope_canonical_key(const json_t *key)
{
    char *canon = sqlq_json_text(key, true, NULL);
    if (canon)
        lower_unicode_escapes(canon);
    return canon;
}

sqlq_result sqlq_envelope_id(const char *bridge_name, const char *table, const json_t *key,
                             int64_t version, char out[33], sqlq_error *err)
{
    out[0] = '\0';
    char *canon = sqlq_envelope_canonical_key(key);
    if (!canon)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot serialise the change key");
    char ver[32];
    int vlen = snprintf(ver, sizeof(ver), "%lld", (long long)version);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, bridge_name, strlen(bridge_name) + 1) == 1 &&
              EVP_DigestUpdate(ctx, table, strlen(table) + 1) == 1 &&
              EVP_DigestUpdate(ctx, canon, strlen(canon) + 1) == 1 &&
              EVP_DigestUpdate(ctx, ver, (size_t)vlen) == 1 &&
              EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 16;
    EVP_MD_CTX_free(ctx);
    free(canon);
    if (!ok)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "SHA-256 failed");
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 16; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[32] = '\0';
    return SQLQ_OK;
}

void sqlq_envelope_format_ts(int64_t epoch_ms, char out[25])
{
    static _Thread_local bool have; /* one timestamp for every change of a build */
    static _Thread_local int64_t last_ms;
    static _Thread_local char last[25];
    if (have && epoch_ms == last_ms) {
        memcpy(out, last, 25);
        return;
    }
    time_t s = (time_t)(epoch_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    int year = tm.tm_year + 1900;
    if (year < 0 || year > 9999)
        year = year < 0 ? 0 : 9999;
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, (tm.tm_mon + 1) % 100,
             tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100,
             (int)(epoch_ms % 1000 + 1000) % 1000);
    memcpy(out, tmp, 24);
    out[24] = '\0';
    memcpy(last, out, 25);
    last_ms = epoch_ms;
    have = true;
}

/* A change whose row is gone although the operation says otherwise is, now, a delete. */
static sqlq_op effective_op(const sqlq_msg_change *ch)
{
    return ch->row ? ch->op : SQLQ_OP_DELETE;
}

/* The optional fields a route asks for (docs/messages.md): "changed" on an update, "before"
 * on an update or a delete; never on a truncated (key-only) change. */
static int image_fields(json_t *o, const sqlq_msg_change *ch, sqlq_op op)
{
    int rc = 0;
    if (ch->changed && op == SQLQ_OP_UPDATE)
        rc |= json_object_set_new(o, "changed", json_incref(ch->changed));
    if (ch->before && (op == SQLQ_OP_UPDATE || op == SQLQ_OP_DELETE))
        rc |= json_object_set_new(o, "before", json_incref(ch->before));
    return rc;
}

/* The row-mode object of one change; truncated: key only, row omitted. NULL on OOM. A read
 * (backfill) has its row last, as backfill has always written it. */
static json_t *row_object(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch, int64_t ts_ms,
                          bool truncated, bool with_key)
{
    char id[33], ts[25];
    if (sqlq_envelope_id(cfg->bridge_name, cfg->table, ch->key, ch->version, id, NULL) != SQLQ_OK)
        return NULL;
    sqlq_envelope_format_ts(ts_ms, ts);
    sqlq_op op = effective_op(ch);
    bool row_first = !truncated && op != SQLQ_OP_READ, row_last = !truncated && op == SQLQ_OP_READ;
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = json_object_set_new(o, "id", json_string(id));
    rc |= json_object_set_new(o, "op", json_string(sqlq_op_name(op)));
    rc |= json_object_set_new(o, "table", json_string(cfg->table));
    if (with_key)
        rc |= json_object_set_new(o, "key", json_incref(ch->key));
    if (row_first)
        rc |= json_object_set_new(o, "row", op == SQLQ_OP_DELETE ? json_null() : json_incref(ch->row));
    if (!truncated)
        rc |= image_fields(o, ch, op);
    rc |= json_object_set_new(o, "version", json_integer((json_int_t)ch->version));
    rc |= json_object_set_new(o, "bridge", json_string(cfg->bridge_name));
    rc |= json_object_set_new(o, "ts", json_string(ts));
    if (row_last)
        rc |= json_object_set_new(o, "row", json_incref(ch->row));
    if (truncated)
        rc |= json_object_set_new(o, "truncated", json_true());
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The Azure Functions SQL trigger element: {"Operation": 0|1|2, "Item": row or key fields}. */
static json_t *functions_object(const sqlq_msg_change *ch, bool truncated)
{
    sqlq_op op = effective_op(ch);
    json_t *item = json_incref((op == SQLQ_OP_DELETE || truncated) ? ch->key : ch->row);
    json_t *o = json_object();
    if (!o || !item) {
        json_decref(o);
        json_decref(item);
        return NULL;
    }
    sqlq_op operation = op == SQLQ_OP_READ ? SQLQ_OP_UPDATE : op; /* the trigger has no read */
    int rc = json_object_set_new(o, "Operation", json_integer((json_int_t)operation));
    rc |= json_object_set_new(o, "Item", item);
    if (truncated)
        rc |= json_object_set_new(o, "Truncated", json_true());
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *element(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch, int64_t ts_ms,
                       bool truncated)
{
    return cfg->format == SQLQ_FORMAT_FUNCTIONS ? functions_object(ch, truncated)
                                                : row_object(cfg, ch, ts_ms, truncated, true);
}

/* The element as compact JSON text (the row and batch formats' written straight). */
static char *element_text(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch, int64_t ts_ms,
                          bool truncated, size_t *out_len)
{
    if (cfg->format != SQLQ_FORMAT_FUNCTIONS)
        return sqlq_envelope_text_row(cfg, ch, ts_ms, truncated, false, out_len);
    json_t *o = element(cfg, ch, ts_ms, truncated);
    char *s = o ? sqlq_json_text(o, false, out_len) : NULL;
    json_decref(o);
    return s;
}

/* The row-format element without its before image, marked "before_truncated": the first
 * step down for a change too large (row and changed kept). NULL when it has no before. */
static char *element_text_no_before(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch,
                                    int64_t ts_ms, size_t *out_len)
{
    if (cfg->format == SQLQ_FORMAT_FUNCTIONS || !ch->before)
        return NULL;
    return sqlq_envelope_text_row(cfg, ch, ts_ms, false, true, out_len);
}

static const char *wrap_prefix(sqlq_envelope_format f)
{
    return f == SQLQ_FORMAT_BATCH ? "{\"changes\":[" : f == SQLQ_FORMAT_FUNCTIONS ? "[" : "";
}

static const char *wrap_suffix(sqlq_envelope_format f)
{
    return f == SQLQ_FORMAT_BATCH ? "]}" : f == SQLQ_FORMAT_FUNCTIONS ? "]" : "";
}

static size_t wrap_overhead(sqlq_envelope_format f)
{
    return strlen(wrap_prefix(f)) + strlen(wrap_suffix(f));
}

static bool fits(const sqlq_envelope_config *cfg, size_t json_len)
{
    return sqlq_codec_encoded_size(cfg->encoding, json_len) <= cfg->max_text;
}

static sqlq_result list_push(sqlq_envelope_list *l, sqlq_envelope_dest dest, char *body, size_t len,
                             const size_t *changes, size_t nchanges, bool truncated,
                             sqlq_error *err)
{
    sqlq_envelope *items = realloc(l->items, (l->count + 1) * sizeof(*items));
    size_t *idx = malloc((nchanges ? nchanges : 1) * sizeof(*idx));
    if (items)
        l->items = items;
    if (!items || !idx) {
        free(idx);
        free(body);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    }
    memcpy(idx, changes, nchanges * sizeof(*idx));
    l->items[l->count++] = (sqlq_envelope){dest, body, len, idx, nchanges, truncated};
    return SQLQ_OK;
}

void sqlq_envelope_list_free(sqlq_envelope_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].body);
        free(l->items[i].changes);
    }
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* The message one change alone is sent as, as JSON: the element wrapped per format. */
static json_t *single_message(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch,
                              int64_t ts_ms, bool truncated)
{
    json_t *e = element(cfg, ch, ts_ms, truncated);
    if (!e || cfg->format == SQLQ_FORMAT_ROW)
        return e;
    json_t *arr = json_array();
    if (!arr || json_array_append_new(arr, e) != 0) {
        json_decref(arr);
        return NULL;
    }
    if (cfg->format == SQLQ_FORMAT_FUNCTIONS)
        return arr;
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "changes", arr) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* JSON text with U+FFFE and U+FFFF, which plain text (XML 1.0) cannot carry, written as the
 * escapes \ufffe and \uffff: the same JSON. Jansson escapes control characters itself and
 * holds valid UTF-8 only, so these two are all it writes raw that XML refuses; in valid UTF-8
 * 0xEF only ever leads a character. Frees s; NULL when out of memory. */
static char *escape_noncharacters(char *s, size_t *len)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = SQLQ_OK;
    size_t from = 0;
    for (size_t i = 0; r == SQLQ_OK && i + 2 < *len; i++) {
        const unsigned char *u = (const unsigned char *)s + i;
        if (u[0] != 0xEF || u[1] != 0xBF || (u[2] != 0xBE && u[2] != 0xBF))
            continue;
        r = sqlq_buf_add(&b, s + from, i - from);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(&b, u[2] == 0xBE ? "\\ufffe" : "\\uffff");
        from = i + 3;
        i += 2;
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_add(&b, s + from, *len - from);
    free(s);
    if (r != SQLQ_OK) {
        sqlq_buf_free(&b);
        return NULL;
    }
    return sqlq_buf_take(&b, len);
}

/* The poison envelope {"sqlq_poison":1, "reason", "message"} as text, or NULL (OOM). stage 0:
 * full, 1: key only, 2: no key. */
static char *poison_text(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch, const char *reason,
                         int64_t ts_ms, int stage)
{
    json_t *m;
    if (stage < 2) {
        m = single_message(cfg, ch, ts_ms, stage == 1);
    } else {
        m = row_object(cfg, ch, ts_ms, true, false);
        if (m && json_object_set_new(m, "key_omitted", json_true()) != 0) {
            json_decref(m);
            m = NULL;
        }
    }
    return m ? sqlq_poison_envelope_write(reason, m) : NULL;
}

sqlq_result sqlq_envelope_add_poison(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch,
                                     size_t index, const char *reason, int64_t ts_ms,
                                     sqlq_envelope_list *out, sqlq_error *err)
{
    /* Never above the service limit: a poison message must not be refused for its size. */
    sqlq_envelope_config capped = *cfg;
    if (capped.max_text > SQLQ_MESSAGE_MAX_TEXT)
        capped.max_text = SQLQ_MESSAGE_MAX_TEXT;
    for (int stage = 0; stage < 3; stage++) {
        char *s = poison_text(cfg, ch, reason, ts_ms, stage);
        size_t len = s ? strlen(s) : 0;
        /* A change poisoned because plain text cannot carry it must still reach the poison queue. */
        if (s && !sqlq_codec_carries(cfg->encoding, s, len))
            s = escape_noncharacters(s, &len);
        if (!s)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building a poison message");
        if (fits(&capped, len) || stage == 2)
            return list_push(out, SQLQ_DEST_POISON, s, len, &index, 1, stage > 0, err);
        free(s);
    }
    return SQLQ_OK; /* not reached */
}

/* Packs elements into one message at a time (batch and functions formats). */
typedef struct packer {
    const sqlq_envelope_config *cfg;
    sqlq_buf text;
    size_t *idx;
    size_t count;
    bool truncated;
} packer;

static sqlq_result packer_flush(packer *p, sqlq_envelope_list *out, sqlq_error *err)
{
    if (p->count == 0)
        return SQLQ_OK;
    if (sqlq_buf_adds(&p->text, wrap_suffix(p->cfg->format)) != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    size_t len = 0;
    char *body = sqlq_buf_take(&p->text, &len);
    sqlq_result r = list_push(out, SQLQ_DEST_MAIN, body, len, p->idx, p->count, p->truncated, err);
    p->count = 0;
    p->truncated = false;
    return r;
}

static sqlq_result packer_add(packer *p, size_t index, const char *text, size_t len,
                              bool truncated, sqlq_envelope_list *out, sqlq_error *err)
{
    size_t after = p->text.len + 1 + len + strlen(wrap_suffix(p->cfg->format));
    if (p->count > 0 && !fits(p->cfg, after)) {
        sqlq_result r = packer_flush(p, out, err);
        if (r != SQLQ_OK)
            return r;
    }
    sqlq_result r = sqlq_buf_adds(&p->text, p->count == 0 ? wrap_prefix(p->cfg->format) : ",");
    if (r == SQLQ_OK)
        r = sqlq_buf_add(&p->text, text, len);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    p->idx[p->count++] = index;
    p->truncated = p->truncated || truncated;
    return SQLQ_OK;
}

/* A change whose text its encoding cannot carry, in a message of its own (batch and functions
 * formats): the put refuses that message alone, and only its change counts toward poison, not
 * the changes it would have shared a message with. Frees text. */
static sqlq_result push_alone(const sqlq_envelope_config *cfg, size_t index, char *text, size_t len,
                              bool truncated, sqlq_envelope_list *out, sqlq_error *err)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_buf_adds(&b, wrap_prefix(cfg->format));
    if (r == SQLQ_OK)
        r = sqlq_buf_add(&b, text, len);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&b, wrap_suffix(cfg->format));
    free(text);
    if (r != SQLQ_OK) {
        sqlq_buf_free(&b);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    }
    size_t blen = 0;
    char *body = sqlq_buf_take(&b, &blen);
    return list_push(out, SQLQ_DEST_MAIN, body, blen, &index, 1, truncated, err);
}

/* Route one change: its text into the packer or a message of its own; too large, without its
 * before image, then key-only, or to poison when even that cannot fit (or by policy). */
static sqlq_result build_one(packer *p, const sqlq_msg_change *changes, size_t i, int64_t ts_ms,
                             sqlq_envelope_list *out, sqlq_error *err)
{
    const sqlq_envelope_config *cfg = p->cfg;
    size_t over = wrap_overhead(cfg->format), len = 0;
    bool truncated = false, too_large = false;
    char *text = element_text(cfg, &changes[i], ts_ms, false, &len);
    if (text && !fits(cfg, over + len)) {
        too_large = true;
        char reason[256];
        snprintf(reason, sizeof(reason),
                 "message too large: %zu bytes as sent, limit %zu (oversize policy %s)",
                 sqlq_codec_encoded_size(cfg->encoding, over + len), cfg->max_text,
                 sqlq_oversize_policy_name(cfg->oversize));
        free(text);
        text = NULL;
        if (cfg->oversize == SQLQ_OVERSIZE_POISON)
            return sqlq_envelope_add_poison(cfg, &changes[i], i, reason, ts_ms, out, err);
        text = element_text_no_before(cfg, &changes[i], ts_ms, &len); /* before goes first */
        if (text && !fits(cfg, over + len)) {
            free(text);
            text = NULL;
        }
    }
    if (!text && too_large) { /* still too large: the key only */
        truncated = true;
        text = element_text(cfg, &changes[i], ts_ms, true, &len);
        if (text && !fits(cfg, over + len)) {
            free(text);
            return sqlq_envelope_add_poison(cfg, &changes[i], i, "message too large even with the key only",
                                            ts_ms, out, err);
        }
    }
    if (!text)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building a message");
    if (cfg->format == SQLQ_FORMAT_ROW)
        return list_push(out, SQLQ_DEST_MAIN, text, len, &i, 1, truncated, err);
    if (!sqlq_codec_carries(cfg->encoding, text, len))
        return push_alone(cfg, i, text, len, truncated, out, err);
    sqlq_result r = packer_add(p, i, text, len, truncated, out, err);
    free(text);
    return r;
}

sqlq_result sqlq_envelope_build(const sqlq_envelope_config *cfg, const sqlq_msg_change *changes,
                                size_t n, int64_t ts_ms, sqlq_envelope_list *out, sqlq_error *err)
{
    packer p = {cfg, {0}, NULL, 0, false};
    sqlq_buf_init(&p.text, cfg->max_text + 64);
    p.idx = malloc((n ? n : 1) * sizeof(*p.idx));
    if (!p.idx)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building messages");
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; i < n && r == SQLQ_OK; i++)
        r = build_one(&p, changes, i, ts_ms, out, err);
    if (r == SQLQ_OK)
        r = packer_flush(&p, out, err);
    sqlq_buf_free(&p.text);
    free(p.idx);
    return r;
}
