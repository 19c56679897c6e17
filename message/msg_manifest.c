/* msg_manifest: repair manifests written and read back (see the header). */
#include "msg_manifest.h"

#include "envelope.h"
#include "msg_change.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_SLACK 64 /* room for the part numbers' digits beyond the measured head */

/* ---- reading ----------------------------------------------------------------------------- */

/* member `name` of o: an integer in [min, SQLQ_MSG_VERSION_MAX]. */
static sqlq_result int_member(const json_t *o, const char *name, int64_t min, int64_t *out,
                              sqlq_error *err)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "manifest without an integer \"%s\"", name);
    json_int_t n = json_integer_value(v);
    if (n < min || n > SQLQ_MSG_VERSION_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "manifest \"%s\" %" PRId64 " is out of range (%" PRId64 "..2^53)",
                              name, (int64_t)n, min);
    *out = (int64_t)n;
    return SQLQ_OK;
}

static sqlq_result read_page(sqlq_msg_manifest *m, sqlq_error *err)
{
    json_t *o = m->root;
    sqlq_result r = int_member(o, "page", 1, &m->page, err);
    if (r == SQLQ_OK)
        r = int_member(o, "part", 1, &m->part, err);
    if (r == SQLQ_OK)
        r = int_member(o, "parts", 1, &m->parts, err);
    if (r == SQLQ_OK)
        r = int_member(o, "version", -SQLQ_MSG_VERSION_MAX, &m->version, err);
    if (r == SQLQ_OK && m->part > m->parts)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "manifest part %" PRId64 " of %" PRId64,
                           m->part, m->parts);
    m->has_prev = json_object_get(o, "prev") != NULL;
    if (r == SQLQ_OK && m->has_prev)
        r = int_member(o, "prev", -SQLQ_MSG_VERSION_MAX, &m->prev, err);
    if (r == SQLQ_OK && !m->has_prev && m->page > 1)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "manifest of page %" PRId64 " without \"prev\"", m->page);
    m->keys = json_object_get(o, "keys");
    if (r == SQLQ_OK && !json_is_array(m->keys))
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "manifest without a \"keys\" array");
    size_t i;
    json_t *k;
    json_array_foreach(m->keys, i, k) {
        if (r == SQLQ_OK && !json_is_object(k))
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "manifest keys[%zu] is not an object",
                               i);
    }
    return r;
}

sqlq_result sqlq_msg_manifest_parse(const char *body, size_t len, sqlq_msg_manifest *out,
                                    sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    out->root = json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    const char *op = json_string_value(json_object_get(out->root, "op"));
    bool page = op && strcmp(op, "manifest") == 0, end = op && strcmp(op, "manifest_end") == 0;
    if (!page && !end) {
        sqlq_msg_manifest_free(out);
        return SQLQ_E_NOT_FOUND; /* not a manifest: nothing recorded in err */
    }
    out->kind = page ? SQLQ_MANIFEST_PAGE : SQLQ_MANIFEST_END;
    sqlq_result r = int_member(out->root, "run", 0, &out->run, err);
    if (r == SQLQ_OK && page)
        r = read_page(out, err);
    if (r == SQLQ_OK && end)
        r = int_member(out->root, "pages", 0, &out->page, err);
    if (r == SQLQ_OK && end && out->page > 0)
        r = int_member(out->root, "last", -SQLQ_MSG_VERSION_MAX, &out->version, err);
    if (r != SQLQ_OK)
        sqlq_msg_manifest_free(out);
    return r;
}

void sqlq_msg_manifest_free(sqlq_msg_manifest *m)
{
    if (!m)
        return;
    json_decref(m->root);
    memset(m, 0, sizeof(*m));
}

/* ---- writing ----------------------------------------------------------------------------- */

static json_t *head(const sqlq_manifest_head *h, const char *op)
{
    char ts[25];
    sqlq_envelope_format_ts(h->ts_ms, ts);
    return json_pack("{s:s, s:s, s:s, s:I, s:s}", "op", op, "table", h->table ? h->table : "",
                     "bridge", h->bridge ? h->bridge : "default", "run", (json_int_t)h->run,
                     "ts", ts);
}

static char *dump(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

/* One part: keys[from, to). */
static char *page_part(const sqlq_manifest_head *h, int64_t page, int64_t version, bool has_prev,
                       int64_t prev, const json_t *keys, size_t from, size_t to, size_t part,
                       size_t parts)
{
    json_t *o = head(h, "manifest");
    json_t *list = json_array();
    for (size_t i = from; o && list && i < to; i++)
        if (json_array_append(list, json_array_get(keys, i)) != 0)
            break;
    if (!o || !list || json_array_size(list) != to - from ||
        json_object_set_new(o, "page", json_integer((json_int_t)page)) != 0 ||
        json_object_set_new(o, "part", json_integer((json_int_t)part)) != 0 ||
        json_object_set_new(o, "parts", json_integer((json_int_t)parts)) != 0 ||
        json_object_set_new(o, "version", json_integer((json_int_t)version)) != 0 ||
        (has_prev && json_object_set_new(o, "prev", json_integer((json_int_t)prev)) != 0)) {
        json_decref(o);
        json_decref(list);
        return NULL;
    }
    json_object_set_new(o, "keys", list);
    return dump(o);
}

/* Where each part starts (starts[0] = 0, *nparts of them): keys packed greedily by the size of
 * their compact JSON under the limit left beside the head. */
static sqlq_result split(const sqlq_manifest_head *h, const json_t *keys, size_t room,
                         size_t *starts, size_t *nparts, sqlq_error *err)
{
    size_t n = json_array_size(keys), used = 0;
    *nparts = 1;
    starts[0] = 0;
    for (size_t i = 0; i < n; i++) {
        char *k = json_dumps(json_array_get(keys, i), JSON_COMPACT);
        if (!k)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        size_t len = strlen(k) + 1; /* and a comma */
        free(k);
        if (sqlq_codec_encoded_size(h->encoding, len) > room)
            return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false,
                                  "a key alone does not fit in a manifest message");
        if (used > 0 && sqlq_codec_encoded_size(h->encoding, used + len) > room) {
            starts[(*nparts)++] = i;
            used = 0;
        }
        used += len;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_msg_manifest_page(const sqlq_manifest_head *h, int64_t page, int64_t version,
                                   bool has_prev, int64_t prev, const json_t *keys, char ***out,
                                   size_t *out_n, sqlq_error *err)
{
    *out = NULL;
    *out_n = 0;
    size_t n = json_array_size(keys);
    char *empty = page_part(h, page, version, has_prev, prev, keys, 0, 0, 1, 1);
    size_t head_len = empty ? strlen(empty) + HEAD_SLACK : 0;
    free(empty);
    size_t limit = sqlq_codec_encoded_size(h->encoding, head_len);
    if (!head_len || limit >= h->max_text)
        return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false, "no room for a manifest's keys");
    /* the room for the keys, in encoded bytes: what the limit leaves beside the head */
    size_t room = h->max_text - limit;
    size_t *starts = calloc(n + 1, sizeof(*starts)), nparts = 0;
    sqlq_result r = starts ? split(h, keys, room, starts, &nparts, err)
                           : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    char **texts = r == SQLQ_OK ? calloc(nparts, sizeof(*texts)) : NULL;
    if (r == SQLQ_OK && !texts)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t p = 0; r == SQLQ_OK && p < nparts; p++) {
        size_t to = p + 1 < nparts ? starts[p + 1] : n;
        texts[p] = page_part(h, page, version, has_prev, prev, keys, starts[p], to, p + 1, nparts);
        if (!texts[p])
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        else if (sqlq_codec_encoded_size(h->encoding, strlen(texts[p])) > h->max_text)
            r = sqlq_error_set(err, SQLQ_E_TOO_LARGE, false, "a manifest part exceeds the limit");
    }
    free(starts);
    if (r != SQLQ_OK) {
        sqlq_msg_manifest_texts_free(texts, nparts);
        return r;
    }
    *out = texts;
    *out_n = nparts;
    return SQLQ_OK;
}

sqlq_result sqlq_msg_manifest_end(const sqlq_manifest_head *h, int64_t pages, int64_t last,
                                  char **out, sqlq_error *err)
{
    json_t *o = head(h, "manifest_end");
    if (o && (json_object_set_new(o, "pages", json_integer((json_int_t)pages)) != 0 ||
              (pages > 0 && json_object_set_new(o, "last", json_integer((json_int_t)last)) != 0))) {
        json_decref(o);
        o = NULL;
    }
    *out = dump(o);
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

void sqlq_msg_manifest_texts_free(char **texts, size_t n)
{
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
}
