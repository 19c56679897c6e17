/* sink_manifest: a repair manifest applied by the --sql sink (see the header). */
#include "sink_manifest.h"

#include "log.h"
#include "sink_change.h"
#include "version_guard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A page's part: the part, each key it found (as the guard hashes it), and the floor the page
 * before was committed with. */
static sqlq_result record_page(const sqlq_sink_manifest_ctx *ctx, sqlq_db *db,
                               const sqlq_msg_manifest *m, sqlq_error *err)
{
    const sqlq_sink_repair *rp = ctx->rp;
    char part[24];
    snprintf(part, sizeof(part), "%" PRId64, m->part);
    sqlq_result r = sqlq_sink_repair_add(db, rp, m->run, 'p', m->page, m->version, part, m->parts,
                                         err);
    if (r == SQLQ_OK && m->has_prev)
        r = sqlq_sink_repair_add(db, rp, m->run, 'c', m->page - 1, 0, "", m->prev, err);
    size_t i;
    json_t *key;
    json_array_foreach(m->keys, i, key) {
        json_t *canon = NULL;
        char *text = NULL, hash[65];
        if (r == SQLQ_OK)
            r = sqlq_sink_key_canonical(ctx->table, ctx->shown, key, &canon, err);
        if (r == SQLQ_OK && !(text = json_dumps(canon, JSON_SORT_KEYS | JSON_COMPACT)))
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        if (r == SQLQ_OK) {
            sqlq_version_guard_key_hash(text, hash);
            r = sqlq_sink_repair_add(db, rp, m->run, 'k', m->page, m->version, hash, 0, err);
        }
        free(text);
        json_decref(canon);
    }
    return r;
}

/* The sweep: every row of the target below `version` whose key no page found goes, its
 * version raised to `version` (a tombstone). */
static sqlq_result sweep(const sqlq_sink_manifest_ctx *ctx, sqlq_db *db, int64_t run,
                         int64_t version, long long *out_deleted, sqlq_error *err)
{
    json_t *gone = NULL;
    sqlq_result r = sqlq_sink_repair_gone(db, ctx->rp, run, version, &gone, err);
    size_t i;
    json_t *row;
    json_array_foreach(gone, i, row) {
        const char *hash = json_string_value(json_object_get(row, "key_hash"));
        const char *text = json_string_value(json_object_get(row, "key_json"));
        json_t *key = text ? json_loads(text, 0, NULL) : NULL;
        bool newer = false;
        if (r == SQLQ_OK && (!hash || !json_is_object(key)))
            SQLQ_WARN("sink.repair_key_unreadable", "table=%s key_hash=%s", ctx->shown,
                      hash ? hash : "?");
        else if (r == SQLQ_OK)
            r = sqlq_version_guard_claim(db, &ctx->rp->versions, ctx->rp->target, hash, text,
                                         version, &newer, err);
        if (r == SQLQ_OK && newer) {
            r = ctx->delete_key(ctx->arg, db, key, err);
            (*out_deleted)++;
        }
        json_decref(key);
    }
    json_decref(gone);
    return r;
}

static sqlq_result apply_in(const sqlq_sink_manifest_ctx *ctx, sqlq_db *db,
                            const sqlq_msg_manifest *m, long long *out_deleted, sqlq_error *err)
{
    const sqlq_sink_repair *rp = ctx->rp;
    sqlq_result r = sqlq_sink_repair_lock(db, rp, m->run, err);
    if (r == SQLQ_OK && m->kind == SQLQ_MANIFEST_PAGE)
        r = record_page(ctx, db, m, err);
    if (r == SQLQ_OK && m->kind == SQLQ_MANIFEST_END)
        r = sqlq_sink_repair_add(db, rp, m->run, 'e', 0, 0, "", m->page, err);
    if (r == SQLQ_OK && m->kind == SQLQ_MANIFEST_END && m->page > 0)
        r = sqlq_sink_repair_add(db, rp, m->run, 'c', m->page, 0, "", m->version, err);
    bool due = false;
    int64_t version = 0, pages = 0;
    if (r == SQLQ_OK)
        r = sqlq_sink_repair_due(db, rp, m->run, &due, &version, &pages, err);
    if (r != SQLQ_OK || !due)
        return r;
    *out_deleted = 0;
    if (pages > 0)
        r = sweep(ctx, db, m->run, version, out_deleted, err);
    if (r == SQLQ_OK)
        r = sqlq_sink_repair_done(db, rp, m->run, err);
    if (r == SQLQ_OK)
        SQLQ_INFO("sink.repaired",
                  "table=%s run=%" PRId64 " pages=%" PRId64 " version=%" PRId64 " deleted=%lld "
                  "note=\"rows the backfill's pages did not find, older than its first page\"",
                  ctx->shown, m->run, pages, version, *out_deleted);
    return r;
}

sqlq_result sqlq_sink_manifest_apply(const sqlq_sink_manifest_ctx *ctx, sqlq_db *db,
                                     const sqlq_msg_manifest *m, long long *out_deleted,
                                     sqlq_error *err)
{
    *out_deleted = -1;
    sqlq_result r = sqlq_sink_repair_install(db, ctx->rp, err);
    if (r == SQLQ_OK)
        r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = apply_in(ctx, db, m, out_deleted, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        *out_deleted = -1;
    }
    return r;
}
