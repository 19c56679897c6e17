/* route_filter: what one route publishes of its table's changes: which operations (--ops) and
 * which columns of the row (--columns / --exclude-columns; the key is always sent). A change
 * the route does not publish is released like a delivered one (docs/messages.md, Filters). */
#ifndef SQLQ_ROUTE_FILTER_H
#define SQLQ_ROUTE_FILTER_H

#include "msg_change.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>

#define SQLQ_ROUTE_FILTER_MAX_COLUMNS 256

typedef struct sqlq_route_filter {
    unsigned ops;    /* bit (1u << sqlq_op) per published operation; all by default */
    bool exclude;    /* columns[] are left out (else: only columns[] and the key are sent) */
    size_t ncolumns; /* 0: every column */
    char *columns[SQLQ_ROUTE_FILTER_MAX_COLUMNS];
} sqlq_route_filter;

/* From the settings as written: columns and exclude_columns are comma-separated column names
 * (at most one of them set), ops a comma-separated subset of insert,update,delete; NULL or ""
 * means no restriction. Errors name the key, the value and what is allowed. */
SQLQ_NODISCARD sqlq_result sqlq_route_filter_parse(const char *columns, const char *exclude_columns,
                                                   const char *ops, sqlq_route_filter *out,
                                                   sqlq_error *err);
void sqlq_route_filter_free(sqlq_route_filter *f);

/* The route publishes changes of this operation. */
bool sqlq_route_filter_publishes(const sqlq_route_filter *f, sqlq_op op);

/* What the route publishes for a change: false when nothing (released unsent), else *out_op.
 * unmatched: the current row exists but fails the route's --where. The rule (Sequin's): an
 * insert that does not match is not published; an update that does not match is published as
 * a delete of the key (the row may have left the filtered set; a consumer that never had it
 * deletes nothing); a delete is always published. Then --ops applies to the resulting op. */
bool sqlq_route_filter_decide(const sqlq_route_filter *f, sqlq_op op, bool unmatched,
                              sqlq_op *out_op);

/* The row as the route sends it: a new reference; the selected columns plus every key column
 * (key: object of the primary-key columns). NULL row gives NULL. NULL when out of memory. */
json_t *sqlq_route_filter_row(const sqlq_route_filter *f, json_t *row, const json_t *key);

/* The names of changed columns (array) the route sends: the selected ones; a new reference,
 * NULL for NULL or when out of memory. */
json_t *sqlq_route_filter_names(const sqlq_route_filter *f, json_t *names, const json_t *key);

/* A column the filter names that the table does not have (columns: the table's column names),
 * or NULL when all exist: a typo would otherwise silently send nothing or everything. */
const char *sqlq_route_filter_unknown(const sqlq_route_filter *f, const char *const *columns,
                                      size_t n);

#endif
