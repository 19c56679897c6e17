/* logical_rel: a pgoutput Relation message made ready to turn the table's tuples into the
 * key, row and before objects of a change, as the trigger source builds them. */
#ifndef SQLQ_LOGICAL_REL_H
#define SQLQ_LOGICAL_REL_H

#include "db.h"
#include "logical_txn.h"
#include "pg_text.h"
#include "pgoutput.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_logical_rel {
    uint32_t relid;
    char replident;
    size_t ncols;
    char **names;               /* the relation's columns, in its order */
    sqlq_pg_text_column *conv;  /* how each column's text becomes JSON */
    size_t *key;                /* the table's key columns, as indexes into names */
    size_t nkey;
} sqlq_logical_rel;

/* From a Relation message (kind SQLQ_PGO_RELATION) and the table as described (its key, and
 * each column's declared type for pg_text). db (may be NULL) reads user types' catalog rows.
 * A key column the relation lacks is SQLQ_E_INVALID naming it. */
SQLQ_NODISCARD sqlq_result sqlq_logical_rel_make(const sqlq_pgo_msg *m, const sqlq_table *t,
                                                 sqlq_db *db, sqlq_logical_rel **out,
                                                 sqlq_error *err);
void sqlq_logical_rel_free(sqlq_logical_rel *r);

/* The tuple as an object (column → value). A column sent as 'u' (an unchanged TOASTed value)
 * is taken from fill (the old row under REPLICA IDENTITY FULL) when fill has it; otherwise it
 * is left out and *out_missing is set (the caller reads the row by key), as is a column whose
 * text is not its value (pg_text.h's by_key: type lo). NULL when out of
 * memory or the tuple's column count differs from the relation's (*out_missing untouched). */
json_t *sqlq_logical_rel_row(const sqlq_logical_rel *r, const sqlq_pgo_tuple *tuple,
                             const sqlq_pgo_tuple *fill, bool *out_missing);
/* The key object from a tuple (new row, old key or old row). NULL when a key value is
 * missing, null or 'u', or out of memory. */
json_t *sqlq_logical_rel_key(const sqlq_logical_rel *r, const sqlq_pgo_tuple *tuple);
/* Names of the columns whose value differs between old and new (a 'u' in new is unchanged). */
json_t *sqlq_logical_rel_changed(const sqlq_logical_rel *r, const sqlq_pgo_tuple *old_tuple,
                                 const sqlq_pgo_tuple *new_tuple);

/* Add an insert, update or delete message m (raw: its bytes as received) of the relation to
 * txn, keyed as the trigger source logs it: an update that changes the key is a delete of the
 * old key and an insert of the new one. changed: the columns an update changed, computed when
 * the old row came (REPLICA IDENTITY FULL). A key that cannot be read is SQLQ_E_PARSE. */
SQLQ_NODISCARD sqlq_result sqlq_logical_rel_add(sqlq_logical_txn *txn, const sqlq_logical_rel *rel,
                                                const sqlq_pgo_msg *m, const char *raw,
                                                size_t raw_len, bool changed, sqlq_error *err);
/* The change of one entry (logical_txn.h): m is its message decoded again, e the entry (its
 * merged op and changed, which it hands over). before only when asked for and the old row came. */
SQLQ_NODISCARD sqlq_result sqlq_logical_rel_build(const sqlq_logical_rel *rel, const sqlq_pgo_msg *m,
                                                  sqlq_logical_entry *e, bool before_image,
                                                  sqlq_logical_change *out, sqlq_error *err);

#endif
