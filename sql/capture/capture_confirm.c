/* capture_confirm: what a poll really leased, for a source whose versions are stamped after
 * commit (confirm_leases; sqlq_capture_confirm_leases in capture_internal.h; docs/capture.md,
 * "versions stamped after commit"). */
#include "capture_internal.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether a polled row and a held lease name the same key. */
static bool same_key(const sqlq_capture *cap, json_t *row, json_t *held)
{
    char alias[32];
    for (size_t i = 0; i < cap->table->nkey; i++) {
        snprintf(alias, sizeof(alias), "k%zu", i);
        if (!json_equal(json_object_get(row, alias), json_object_get(held, alias)))
            return false;
    }
    return true;
}

/* Keep only the rows this poll really leased. Its SELECT and its INSERT …
 * SELECT are two statements, and a user's commit between them (a key written again: its log
 * row back at version 0, unstamped) drops that row from the second and pulls the next one in,
 * so the tokens, numbered by position, name other keys. A row that does not hold its token
 * is dropped (nobody leased it: a later poll takes it); a lease taken for a row not returned
 * goes into *stray, to be handed back after the commit. Leases are read back by every token
 * the poll reserved (base + 1 … base + max_batch_size): a commit can pull rows in past the
 * last one returned too, whose tokens no returned row carries. */
sqlq_result sqlq_capture_confirm_leases(sqlq_capture *cap, sqlq_capture_values *v, json_t *rows,
                                         sqlq_change **stray, size_t *nstray, sqlq_error *err)
{
    size_t n = json_array_size(rows), reserved = (size_t)cap->spec.max_batch_size;
    int64_t *mine = calloc(n ? n : 1, sizeof(*mine));
    bool *kept = calloc(n ? n : 1, sizeof(*kept));
    sqlq_change *all = calloc(reserved ? reserved : 1, sizeof(*all)); /* then the strays */
    char *tokens = NULL;
    json_t *held = NULL;
    sqlq_result r = mine && kept && all ? SQLQ_OK
                                        : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        if (!sqlq_json_int64(json_object_get(json_array_get(rows, i), "m_tok"), &mine[i]))
            r = sqlq_error_set(err, SQLQ_E_PARSE, false, "unexpected change row from %s", cap->names.table_key);
    for (size_t i = 0; r == SQLQ_OK && i < reserved; i++)
        all[i].lease_token = v->token_base + 1 + (int64_t)i;
    if (r == SQLQ_OK)
        r = sqlq_capture_tokens_json(all, reserved, &tokens, err);
    v->tokens = tokens;
    if (r == SQLQ_OK)
        r = sqlq_capture_query(cap, &cap->held, v, &held, err);
    v->tokens = NULL;
    size_t k = 0, j;
    json_t *h;
    json_array_foreach(held, j, h) {
        int64_t tok = 0;
        bool match = false;
        (void)sqlq_json_int64(json_object_get(h, "m_tok"), &tok);
        for (size_t i = 0; r == SQLQ_OK && i < n && !match; i++)
            if (mine[i] == tok && same_key(cap, json_array_get(rows, i), h))
                match = kept[i] = true;
        if (!match && k < reserved)
            all[k++].lease_token = tok; /* leased, not returned: handed back */
    }
    for (size_t i = n; r == SQLQ_OK && i-- > 0;)
        if (!kept[i])
            json_array_remove(rows, i);
    if (r == SQLQ_OK && (k > 0 || json_array_size(rows) < n))
        SQLQ_DEBUG("capture_poll_raced", "bridge=%s table=%s dropped=%zu handed_back=%zu "
                   "note=\"a commit between the poll's two statements: those changes are polled again\"",
                   cap->bridge, cap->names.table_key, n - json_array_size(rows), k);
    free(tokens);
    json_decref(held);
    free(kept);
    free(mine);
    *stray = all;
    *nstray = r == SQLQ_OK ? k : 0;
    return r;
}
