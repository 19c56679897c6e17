/* msg_manifest: the repair manifests `sqlq backfill --repair` publishes and `sqlq consume --sql`
 * applies (docs/messages.md, "Repair manifests"): per page of the backfill, the keys that page
 * found, in one or more parts; at the end, how many pages there were. A consumer that applies
 * them deletes the rows whose key no page found (older than the run's first page).
 *
 *   {"op":"manifest","table":T,"bridge":B,"run":R,"page":P,"part":J,"parts":N,
 *    "version":F,"prev":F0,"keys":[{key},…],"ts":…}       ("prev": page P-1's committed F)
 *   {"op":"manifest_end","table":T,"bridge":B,"run":R,"pages":N,"last":F,"ts":…}
 *
 * The reader trusts nothing: not JSON, a duplicate member, a member missing or of the wrong type
 * or out of range is refused with a reason. */
#ifndef SQLQ_MSG_MANIFEST_H
#define SQLQ_MSG_MANIFEST_H

#include "codec.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { SQLQ_MANIFEST_PAGE = 0, SQLQ_MANIFEST_END = 1 } sqlq_manifest_kind;

typedef struct sqlq_msg_manifest {
    sqlq_manifest_kind kind;
    int64_t run;      /* the backfill run (its start, ms since 1970) */
    int64_t page;     /* PAGE: 1, 2, …; END: the number of pages */
    int64_t part, parts;  /* PAGE: 1..parts */
    int64_t version;  /* PAGE: the page's floor F; END: the last page's ("last"), 0 without */
    bool has_prev;    /* PAGE: "prev" given (every page but the first) */
    int64_t prev;     /* PAGE: the floor of page-1 as committed */
    json_t *keys;     /* PAGE: array of key objects, borrowed from root */
    json_t *root;     /* the parsed body */
} sqlq_msg_manifest;

/* SQLQ_E_NOT_FOUND: a JSON object whose "op" is neither manifest nor manifest_end (a change:
 * read it with msg_parse), or not an object; SQLQ_E_PARSE / SQLQ_E_INVALID: a manifest that
 * is malformed (the reason says what). On success free with sqlq_msg_manifest_free. */
SQLQ_NODISCARD sqlq_result sqlq_msg_manifest_parse(const char *body, size_t len,
                                                   sqlq_msg_manifest *out, sqlq_error *err);
void sqlq_msg_manifest_free(sqlq_msg_manifest *m);

typedef struct sqlq_manifest_head {
    const char *table, *bridge;
    int64_t run;
    sqlq_encoding encoding; /* sizes are checked after encoding */
    size_t max_text;        /* limit on the encoded text */
    int64_t ts_ms;
} sqlq_manifest_head;

/* The parts of page `page` (keys: array of key objects), each under h->max_text encoded:
 * *out an array of JSON texts (malloc'd each, and the array; *out_n of them). SQLQ_E_TOO_LARGE
 * when one key alone does not fit. has_prev: page > 1. */
SQLQ_NODISCARD sqlq_result sqlq_msg_manifest_page(const sqlq_manifest_head *h, int64_t page,
                                                  int64_t version, bool has_prev, int64_t prev,
                                                  const json_t *keys, char ***out,
                                                  size_t *out_n, sqlq_error *err);
/* The end: pages pages, the last one's floor (ignored when pages is 0). malloc'd text. */
SQLQ_NODISCARD sqlq_result sqlq_msg_manifest_end(const sqlq_manifest_head *h, int64_t pages,
                                                 int64_t last, char **out, sqlq_error *err);
void sqlq_msg_manifest_texts_free(char **texts, size_t n);

#endif
