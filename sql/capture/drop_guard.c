/* drop_guard: what a drop would discard (see the header). */
#include "drop_guard.h"

#include "capture_backlog.h"
#include "capture_presence.h"
#include "catalog.h"
#include "json_int.h"
#include "table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long int_of(const json_t *v)
{
    int64_t n = 0;
    if (json_is_real(v))
        return (long long)json_real_value(v);
    return sqlq_json_int64(v, &n) ? (long long)n : 0;
}

/* One bridge's leases held now and changes not delivered (change logs: from the log). */
static sqlq_result bridge_backlog(sqlq_db *db, const char *table, const char *bridge,
                                  json_t *out, sqlq_error *err)
{
    sqlq_backlog *b = NULL;
    sqlq_backlog_counts c;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_backlog_open(db, table, bridge, &b, &e);
    if (r == SQLQ_OK)
        r = sqlq_backlog_read(b, 0, &c, &e);
    sqlq_backlog_close(b);
    if (r == SQLQ_E_UNSUPPORTED || r == SQLQ_E_NOT_FOUND)
        return SQLQ_OK; /* no change log (SQL Server, or gone already): nothing counted here */
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, e.transient, "%s", e.message);
    if (c.leased > 0)
        json_array_append_new(out, json_pack("{s:s, s:s, s:I}", "bridge", bridge, "kind",
                                             "leases", "leased", (json_int_t)c.leased));
    if (c.pending > 0)
        json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:I}", "bridge", bridge, "kind",
                                             "pending", "pending", (json_int_t)c.pending,
                                             "sync_version", (json_int_t)c.sync_version));
    return SQLQ_OK;
}

sqlq_result sqlq_drop_guard_check(sqlq_db *db, const char *table, const char *bridge,
                                  json_t **out, sqlq_error *err)
{
    *out = json_array();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    bool catalog = false;
    sqlq_result r = sqlq_catalog_exists(db, &catalog, err);
    if (r != SQLQ_OK || !catalog)
        return r;
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    json_t *present = NULL, *rows = NULL;
    r = sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, err);
    sqlq_table_free(t);
    if (r == SQLQ_OK)
        r = sqlq_presence_list(db, n.table_key, bridge, &present, err);
    size_t i;
    json_t *row;
    json_array_foreach(present, i, row) {
        json_t *f = json_pack("{s:O, s:s, s:O, s:I}", "bridge", json_object_get(row, "bridge"),
                              "kind", "instance", "instance", json_object_get(row, "instance"),
                              "left_s", (json_int_t)int_of(json_object_get(row, "left_s")));
        json_array_append_new(*out, f);
    }
    json_decref(present);
    if (r == SQLQ_OK)
        r = sqlq_catalog_find(db, n.table_key, "leases", bridge, &rows, err);
    json_array_foreach(rows, i, row) {
        const char *b = json_string_value(json_object_get(row, "bridge_name"));
        if (r != SQLQ_OK || !b)
            continue;
        r = bridge_backlog(db, table, b, *out, err);
    }
    json_decref(rows);
    return r;
}

void sqlq_drop_guard_text(const json_t *f, char *out, size_t size)
{
    const char *bridge = json_string_value(json_object_get(f, "bridge"));
    const char *kind = json_string_value(json_object_get(f, "kind"));
    bridge = bridge ? bridge : "?";
    kind = kind ? kind : "";
    if (strcmp(kind, "instance") == 0)
        snprintf(out, size, "bridge %s: instance %s is working on the table (it renewed its "
                 "presence within its lease: running, or killed less than a lease ago; it "
                 "counts for %lld s more)", bridge,
                 json_string_value(json_object_get(f, "instance"))
                     ? json_string_value(json_object_get(f, "instance"))
                     : "?",
                 int_of(json_object_get(f, "left_s")));
    else if (strcmp(kind, "leases") == 0)
        snprintf(out, size, "bridge %s: %lld change(s) leased, being published now", bridge,
                 int_of(json_object_get(f, "leased")));
    else
        snprintf(out, size, "bridge %s: %lld change(s) not delivered yet (after sync version "
                 "%lld)", bridge, int_of(json_object_get(f, "pending")),
                 int_of(json_object_get(f, "sync_version")));
}
