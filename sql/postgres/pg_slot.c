/* pg_slot: a logical route's publication and replication slot: names, refusals, setup, drop,
 * and the slot's state (retained WAL, lag), over the route's ODBC connection. */
#include "pg_slot.h"

#include "capture_stop.h"
#include "clock.h"
#include "dialect.h"
#include "json_int.h"
#include "log.h"
#include "setup_hint.h"
#include "sql_text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BACKFILL_HINT                                                                              \
    "changes since then are lost to this route: run `sqlq setup %s --source logical` (a new "    \
    "slot starts from now), then `sqlq backfill` the table so consumers converge"

void sqlq_pg_slot_names_make(const sqlq_catalog_names *n, const char *database,
                             sqlq_pg_slot_names *out)
{
    const char *base = strncmp(n->log_table, "log_", 4) == 0 ? n->log_table + 4 : n->log_table;
    char h[13];
    if (strlen(base) + 5 <= 54) {
        snprintf(out->publication, sizeof out->publication, "sqlq_%s", base);
    } else {
        sqlq_catalog_hash12(n->table_key, NULL, h);
        snprintf(out->publication, sizeof out->publication, "sqlq_%s", h);
    }
    sqlq_catalog_hash12(database, n->bridge[0] ? n->bridge : "default", h);
    h[8] = '\0';
    snprintf(out->slot, sizeof out->slot, "%.54s_%.8s", out->publication, h);
    sqlq_setup_route_args(&n->table, "public", n->bridge, out->setup_args, sizeof out->setup_args);
}

sqlq_result sqlq_pg_slot_names_find(sqlq_db *db, const sqlq_catalog_names *n,
                                    sqlq_pg_slot_names *out, sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_result rc = sqlq_db_query(db, "SELECT current_database() AS db", NULL, 0, &rows, err);
    if (rc == SQLQ_OK) {
        const char *d = json_string_value(json_object_get(json_array_get(rows, 0), "db"));
        sqlq_pg_slot_names_make(n, d ? d : "", out);
    }
    json_decref(rows);
    return rc;
}

/* One row of a query as a JSON object (owned by *rows), or NULL when it returned none. */
static json_t *one_row(sqlq_db *db, const char *sql, const sqlq_param *p, size_t np, json_t **rows,
                       sqlq_error *err, sqlq_result *rc)
{
    *rows = NULL;
    *rc = sqlq_db_query(db, sql, p, np, rows, err);
    if (*rc != SQLQ_OK)
        return NULL;
    return json_array_size(*rows) ? json_array_get(*rows, 0) : NULL;
}

static bool truthy(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_integer(v))
        return json_integer_value(v) != 0;
    const char *s = json_string_value(v);
    return s && (s[0] == 't' || s[0] == '1');
}

static const char *text_of(const json_t *row, const char *key)
{
    const char *s = json_string_value(json_object_get(row, key));
    return s ? s : "";
}

static int64_t int_of(const json_t *row, const char *key)
{
    int64_t n = 0;
    return sqlq_json_int64(json_object_get(row, key), &n) ? n : 0;
}

/* A slot that no longer keeps what the route has not delivered: a retention overrun. */
static sqlq_result retention_overrun(sqlq_error *err, sqlq_result r)
{
    sqlq_error_reason(err, SQLQ_STOP_RETENTION);
    return r;
}

static void warn(json_t *warnings, const char *text)
{
    if (warnings)
        json_array_append_new(warnings, json_string(text));
}

static const char SERVER_SQL[] =
    "SELECT current_setting('wal_level') AS wal_level, "
    "(SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user) AS repl, "
    "current_user AS role, "
    "coalesce(current_setting('max_slot_wal_keep_size', true), '') AS keep, "
    "current_setting('server_version_num')::int AS version, "
    "(SELECT count(*) FROM pg_settings WHERE name LIKE 'azure.%') AS azure, "
    "(SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'physical') AS standbys";

static sqlq_result check_server(sqlq_db *db, json_t *warnings, sqlq_error *err)
{
    json_t *rows;
    sqlq_result rc;
    json_t *r = one_row(db, SERVER_SQL, NULL, 0, &rows, err, &rc);
    if (rc == SQLQ_OK && !r)
        rc = sqlq_error_set(err, SQLQ_E_SQL, false, "the server settings query returned no row");
    if (rc == SQLQ_OK && strcmp(text_of(r, "wal_level"), "logical") != 0)
        rc = sqlq_error_set(
            err, SQLQ_E_UNSUPPORTED, false,
            "wal_level is %s: the logical source needs wal_level = logical (ALTER SYSTEM SET "
            "wal_level = logical and restart the server; Azure Database for PostgreSQL: server "
            "parameter wal_level; Cloud SQL: cloudsql.logical_decoding = on; RDS: "
            "rds.logical_replication = 1), or use --source change_log",
            text_of(r, "wal_level"));
    if (rc == SQLQ_OK && !truthy(r, "repl"))
        rc = sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                            "role %s has no REPLICATION attribute: the logical source streams "
                            "from a replication slot (ALTER ROLE %s REPLICATION), or use "
                            "--source change_log",
                            text_of(r, "role"), text_of(r, "role"));
    if (rc == SQLQ_OK && strcmp(text_of(r, "keep"), "-1") == 0)
        warn(warnings, "max_slot_wal_keep_size is -1: while no bridge streams from the slot the "
                       "server keeps every WAL segment, and its disk can fill; set a bound "
                       "(ALTER SYSTEM SET max_slot_wal_keep_size = '50GB'): a slot past it is "
                       "lost and the route stops, naming sqlq backfill");
    if (rc == SQLQ_OK && int_of(r, "azure") > 0)
        warn(warnings, "Azure Database for PostgreSQL drops a logical slot that is not in use "
                       "when storage runs low, and keeps none across a high-availability "
                       "failover: the route then stops, naming sqlq backfill");
    if (rc == SQLQ_OK && int_of(r, "standbys") > 0 && int_of(r, "version") < 170000)
        warn(warnings, "this server has physical standbys but PostgreSQL before 17 keeps no "
                       "logical slot across a failover (failover slots need PostgreSQL 17): "
                       "after a failover the route stops, naming sqlq backfill");
    json_decref(rows);
    return rc;
}

static void qualified(const sqlq_table *t, char *out, size_t size)
{
    sqlq_sql_text s;
    sqlq_sql_text_init(&s, &sqlq_dialect_postgres);
    sqlq_sql_text_table(&s, &t->name);
    snprintf(out, size, "%s", sqlq_buf_str(&s.buf));
    sqlq_sql_text_free(&s);
}


static const char TABLE_SQL[] =
    "SELECT c.relreplident::text AS ident, "
    "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS pk "
    "FROM pg_class c WHERE c.oid = to_regclass(?)";

static const char IDENTITY_SQL[] =
    "SELECT a.attname::text AS n FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
    "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = to_regclass(?) AND "
    "CASE WHEN ? = 'd' THEN i.indisprimary ELSE i.indisreplident END";

/* A unique index REPLICA IDENTITY USING INDEX takes (not partial, not on expressions, not
 * deferrable) whose columns are exactly the key's; ? 2: the key's names, each ending in \x1f. */
static const char KEY_INDEX_SQL[] =
    "SELECT i.indexrelid::regclass::text AS n FROM pg_index i WHERE i.indrelid = to_regclass(?) "
    "AND i.indisunique AND i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL AND "
    "(SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_attribute a WHERE "
    "a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) = (SELECT array_agg(c ORDER BY c) "
    "FROM unnest(string_to_array(rtrim(?, chr(31)), chr(31))) c) ORDER BY 1 LIMIT 1";

/* What to give REPLICA IDENTITY USING INDEX for t's key: a unique index on its columns, or
 * what to create when there is none. */
static void key_index_hint(sqlq_db *db, const sqlq_table *t, const char *name, char *out,
                           size_t size)
{
    char keys[1024];
    size_t at = 0;
    keys[0] = '\0';
    for (size_t k = 0; k < t->nkey; k++) {
        int n = snprintf(keys + at, sizeof keys - at, "%s\x1f", t->columns[t->key[k]].name);
        at = n > 0 && (size_t)n < sizeof keys - at ? at + (size_t)n : at;
    }
    sqlq_param p[] = {sqlq_param_text(name), sqlq_param_text(keys)};
    json_t *rows = NULL;
    sqlq_error ignored;
    sqlq_error_clear(&ignored);
    sqlq_result rc;
    json_t *r = one_row(db, KEY_INDEX_SQL, p, 2, &rows, &ignored, &rc);
    if (r)
        snprintf(out, size, "%s", text_of(r, "n"));
    else /* none, or the catalog could not be read: say which */
        snprintf(out, size, "%s", rc == SQLQ_OK ? "<a unique index on the key's columns: there "
                 "is none, CREATE UNIQUE INDEX one first>" : "<the key's unique index>");
    json_decref(rows);
}

/* Under REPLICA IDENTITY DEFAULT or USING INDEX the stream sends a row's old values of the
 * identity's columns only: a key column outside them could not be read from a delete, and an
 * update that changes it would leave the old key's message standing. */
static sqlq_result check_identity_holds_key(sqlq_db *db, const sqlq_table *t, const char *name,
                                            const char *ident, sqlq_error *err)
{
    char kind[2] = {ident[0], '\0'};
    sqlq_param p[] = {sqlq_param_text(name), sqlq_param_text(kind)};
    json_t *rows = NULL;
    sqlq_result rc = sqlq_db_query(db, IDENTITY_SQL, p, 2, &rows, err);
    char have[512] = "";
    size_t at = 0, i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        int n = snprintf(have + at, sizeof have - at, "%s%s", i ? ", " : "", text_of(row, "n"));
        at = n > 0 && (size_t)n < sizeof have - at ? at + (size_t)n : at;
    }
    for (size_t k = 0; rc == SQLQ_OK && k < t->nkey; k++) {
        const char *col = t->columns[t->key[k]].name;
        bool held = false;
        json_array_foreach(rows, i, row)
            held = held || strcmp(text_of(row, "n"), col) == 0;
        char index[300] = "";
        if (!held)
            key_index_hint(db, t, name, index, sizeof index);
        if (!held)
            rc = sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                                "table %s is keyed by %s, which its replica identity (%s: %s) "
                                "does not hold: the stream sends the old values of the identity's "
                                "columns only, so a delete could not say which %s it removed and "
                                "an update of %s would leave the old key's message standing. "
                                "ALTER TABLE %s REPLICA IDENTITY USING INDEX %s (or FULL), or "
                                "key the route by (%s)",
                                name, col, ident[0] == 'd' ? "DEFAULT, the primary key" : "USING INDEX",
                                have, col, col, name, index, have);
    }
    if (rc == SQLQ_E_UNSUPPORTED) /* the key, as setup and the bridge report a refused key */
        sqlq_error_reason(err, SQLQ_STOP_KEY_REFUSED);
    json_decref(rows);
    return rc;
}

static sqlq_result check_table(sqlq_db *db, const sqlq_table *t, bool full, sqlq_error *err)
{
    char name[600];
    qualified(t, name, sizeof name);
    sqlq_param p[] = {sqlq_param_text(name)};
    json_t *rows;
    sqlq_result rc;
    json_t *r = one_row(db, TABLE_SQL, p, 1, &rows, err, &rc);
    if (rc == SQLQ_OK && !r)
        rc = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "table %s not found", name);
    const char *ident = rc == SQLQ_OK ? text_of(r, "ident") : "";
    if (rc == SQLQ_OK && (ident[0] == 'n' || (ident[0] == 'd' && !truthy(r, "pk")))) {
        char index[300] = "<a unique index of NOT NULL columns>";
        if (t->nkey > 0) /* the route's key (--key-columns): its unique index */
            key_index_hint(db, t, name, index, sizeof index);
        rc = sqlq_error_set(
            err, SQLQ_E_UNSUPPORTED, false,
            "table %s has no replica identity (REPLICA IDENTITY %s%s): once it is published, "
            "its writers' UPDATE and DELETE fail; give it a primary key, or ALTER TABLE %s "
            "REPLICA IDENTITY USING INDEX %s (or FULL)",
            name, ident[0] == 'n' ? "NOTHING" : "DEFAULT", ident[0] == 'n' ? "" : " and no primary key",
            name, index);
    }
    if (rc == SQLQ_OK && (ident[0] == 'd' || ident[0] == 'i'))
        rc = check_identity_holds_key(db, t, name, ident, err);
    if (rc == SQLQ_OK && full && ident[0] != 'f')
        rc = sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                            "the route asks for before or changed, which need the old row: "
                            "ALTER TABLE %s REPLICA IDENTITY FULL (now %s: only the old key is "
                            "sent), or leave both options off",
                            name, ident[0] == 'i' ? "USING INDEX" : "DEFAULT");
    json_decref(rows);
    return rc;
}

static const char PUB_SQL[] =
    "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = ?) AS pub, "
    "EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = ? AND schemaname = ? AND "
    "tablename = ?) AS member, "
    "coalesce(to_regclass(?)::oid::bigint, 0) AS oid";

static sqlq_result publication_state(sqlq_db *db, const sqlq_table *t, const sqlq_pg_slot_names *n,
                                     sqlq_pg_slot_table *out, sqlq_error *err)
{
    char name[600];
    qualified(t, name, sizeof name);
    sqlq_param p[] = {sqlq_param_text(n->publication), sqlq_param_text(n->publication),
                      sqlq_param_text(t->name.schema[0] ? t->name.schema : "public"),
                      sqlq_param_text(t->name.name), sqlq_param_text(name)};
    json_t *rows;
    sqlq_result rc;
    json_t *r = one_row(db, PUB_SQL, p, 5, &rows, err, &rc);
    out->publication = r && truthy(r, "pub");
    out->member = r && truthy(r, "member");
    out->oid = r ? (uint32_t)int_of(r, "oid") : 0;
    json_decref(rows);
    return rc;
}

sqlq_result sqlq_pg_slot_installed(sqlq_db *db, const sqlq_table *t, const sqlq_pg_slot_names *n,
                                   bool *out, sqlq_error *err)
{
    sqlq_pg_slot_table st;
    sqlq_result rc = publication_state(db, t, n, &st, err);
    *out = st.member;
    return rc;
}

sqlq_result sqlq_pg_slot_table_now(sqlq_db *db, const sqlq_table *t, const sqlq_pg_slot_names *n,
                                   sqlq_pg_slot_table *out, sqlq_error *err)
{
    return publication_state(db, t, n, out, err);
}

sqlq_result sqlq_pg_slot_table_verdict(const sqlq_table *t, const sqlq_pg_slot_names *n,
                                       uint32_t opened, const sqlq_pg_slot_table *now,
                                       sqlq_error *err)
{
    if (now->oid && now->member)
        return SQLQ_OK;
    char what[256];
    if (!now->oid)
        snprintf(what, sizeof what, "no longer exists (dropped or renamed)");
    else if (now->oid != opened)
        snprintf(what, sizeof what, "was built again (a new table, OID %u, under the name of OID "
                 "%u) and the new one is not in publication %s", now->oid, opened, n->publication);
    else
        snprintf(what, sizeof what, "was taken out of publication %s", n->publication);
    sqlq_result r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                                   "table %s.%s %s: its changes are not streamed. The route "
                                   "stops until `sqlq setup %s --source logical` has put the "
                                   "table in publication %s, then streams it again; writes made "
                                   "in between were not captured (`sqlq backfill` them)",
                                   t->name.schema, t->name.name, what, n->setup_args,
                                   n->publication);
    sqlq_error_reason(err, SQLQ_STOP_SOURCE_GONE);
    return r;
}

static sqlq_result check_slot(sqlq_db *db, const sqlq_pg_slot_names *n, sqlq_error *err)
{
    sqlq_pg_slot_state st;
    sqlq_result rc = sqlq_pg_slot_state_get(db, n, &st, err);
    if (rc != SQLQ_OK)
        return rc;
    if (st.exists && st.elsewhere)
        return sqlq_error_set(err, SQLQ_E_CONFLICT, false,
                              "replication slot %s belongs to database %s, not this one: drop it "
                              "there if it is left over (SELECT pg_drop_replication_slot('%s'))",
                              n->slot, st.database, n->slot);
    if (!st.exists)
        return retention_overrun(err, sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "replication slot %s does not exist: `sqlq setup %s --source "
                              "logical` creates it; if it existed, it was dropped (by hand, or by "
                              "the service when storage ran low) and " BACKFILL_HINT,
                              n->slot, n->setup_args, n->setup_args));
    if (strcmp(st.wal_status, "lost") == 0)
        return retention_overrun(err, sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "replication slot %s is lost (wal_status lost: the WAL it needed "
                              "passed max_slot_wal_keep_size and was removed, a retention "
                              "overrun): drop it (`sqlq setup %s --source logical --drop`) and "
                              BACKFILL_HINT,
                              n->slot, n->setup_args, n->setup_args));
    return SQLQ_OK;
}

sqlq_result sqlq_pg_slot_check(sqlq_db *db, const sqlq_table *t, const sqlq_pg_slot_names *n,
                               sqlq_pg_slot_need need, json_t *warnings, sqlq_error *err)
{
    sqlq_result rc = check_server(db, warnings, err);
    if (rc == SQLQ_OK)
        rc = check_table(db, t, need.full_identity, err);
    if (rc == SQLQ_OK && need.publication) {
        sqlq_pg_slot_table st;
        rc = publication_state(db, t, n, &st, err);
        if (rc == SQLQ_OK && !st.member) { /* a route stopped for it: why, as a stop reason */
            rc = sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                                "table %s.%s is not in publication %s%s: run `sqlq setup %s "
                                "--source logical` (or ALTER PUBLICATION %s ADD TABLE …)",
                                t->name.schema, t->name.name, n->publication,
                                st.publication ? "" : " (which does not exist)", n->setup_args,
                                n->publication);
            sqlq_error_reason(err, st.publication ? SQLQ_STOP_SOURCE_GONE : SQLQ_STOP_NOT_SET_UP);
        }
    }
    if (rc == SQLQ_OK && need.slot)
        rc = check_slot(db, n, err);
    return rc;
}

sqlq_result sqlq_pg_slot_state_get(sqlq_db *db, const sqlq_pg_slot_names *n,
                                   sqlq_pg_slot_state *out, sqlq_error *err)
{
    static const char sql[] =
        "SELECT active, coalesce(active_pid, 0) AS pid, coalesce(wal_status, '') AS wal_status, "
        "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint AS retained, "
        "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), 0)::bigint AS lag, "
        "coalesce(pg_wal_lsn_diff(confirmed_flush_lsn, '0/0'), 0)::bigint AS confirmed, "
        "coalesce(database::text, '') AS database, database = current_database() AS here "
        "FROM pg_replication_slots WHERE slot_name = ?";
    memset(out, 0, sizeof *out);
    sqlq_param p[] = {sqlq_param_text(n->slot)};
    json_t *rows;
    sqlq_result rc;
    json_t *r = one_row(db, sql, p, 1, &rows, err, &rc);
    if (r) {
        out->exists = true;
        out->active = truthy(r, "active");
        out->active_pid = (int)int_of(r, "pid");
        snprintf(out->wal_status, sizeof out->wal_status, "%s", text_of(r, "wal_status"));
        out->retained_bytes = int_of(r, "retained");
        out->lag_bytes = int_of(r, "lag");
        out->confirmed_flush = (uint64_t)int_of(r, "confirmed");
        snprintf(out->database, sizeof out->database, "%s", text_of(r, "database"));
        out->elsewhere = !truthy(r, "here");
    }
    json_decref(rows);
    return rc;
}

static void line(json_t *lines, const char *fmt, ...) SQLQ_PRINTF(2, 3);
static void line(json_t *lines, const char *fmt, ...)
{
    char text[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (lines)
        json_array_append_new(lines, json_string(text));
}

static sqlq_result ensure_publication(sqlq_db *db, const sqlq_table *t,
                                      const sqlq_pg_slot_names *n, json_t *lines, sqlq_error *err)
{
    sqlq_pg_slot_table st;
    sqlq_result rc = publication_state(db, t, n, &st, err);
    bool exists = st.publication;
    if (rc != SQLQ_OK || st.member) {
        if (rc == SQLQ_OK)
            line(lines, "publication %s holds the table (kept)", n->publication);
        return rc;
    }
    char name[600], ddl[800];
    qualified(t, name, sizeof name);
    snprintf(ddl, sizeof ddl, exists ? "ALTER PUBLICATION \"%s\" ADD TABLE %s"
                                     : "CREATE PUBLICATION \"%s\" FOR TABLE %s",
             n->publication, name);
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_db_exec(db, ddl, NULL, 0, NULL, &e) != SQLQ_OK) {
        if (strcmp(e.sqlstate, "42501") != 0) {
            if (err && !err->code)
                *err = e;
            return e.code;
        }
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "this role may not %s publication %s (it must own the table): have "
                              "the table's owner run: %s; then run setup again",
                              exists ? "alter" : "create", n->publication, ddl);
    }
    line(lines, "publication %s: %s", n->publication, exists ? "table added" : "created");
    return SQLQ_OK;
}

static sqlq_result ensure_slot(sqlq_db *db, const sqlq_pg_slot_names *n, json_t *lines,
                               sqlq_error *err)
{
    sqlq_pg_slot_state st;
    sqlq_result rc = sqlq_pg_slot_state_get(db, n, &st, err);
    if (rc != SQLQ_OK)
        return rc;
    if (st.exists && (st.elsewhere || strcmp(st.wal_status, "lost") == 0))
        return check_slot(db, n, err); /* never re-created, nor another database's taken */
    if (st.exists) {
        line(lines, "replication slot %s exists (kept)", n->slot);
        return SQLQ_OK;
    }
    uint64_t t0 = sqlq_clock_mono_ms();
    sqlq_param p[] = {sqlq_param_text(n->slot)};
    json_t *rows = NULL;
    rc = sqlq_db_query(db, "SELECT lsn::text AS lsn FROM "
                           "pg_create_logical_replication_slot(?, 'pgoutput')",
                       p, 1, &rows, err);
    if (rc == SQLQ_OK) {
        char waited[96];
        snprintf(waited, sizeof waited, "%.1f s (creation waits for the transactions running "
                 "when it starts to end)", (double)(sqlq_clock_mono_ms() - t0) / 1000.0);
        char what[160];
        snprintf(what, sizeof what, "%s starts at %s", n->slot,
                 text_of(json_array_get(rows, 0), "lsn"));
        line(lines, "replication slot %s: created in %s", what, waited);
    }
    json_decref(rows);
    return rc;
}

sqlq_result sqlq_pg_slot_setup(sqlq_db *db, const sqlq_table *t, const sqlq_pg_slot_names *n,
                               json_t *lines, sqlq_error *err)
{
    sqlq_result rc = ensure_publication(db, t, n, lines, err);
    return rc == SQLQ_OK ? ensure_slot(db, n, lines, err) : rc;
}

sqlq_result sqlq_pg_slot_drop(sqlq_db *db, const sqlq_pg_slot_names *n, json_t *lines,
                              sqlq_error *err)
{
    sqlq_pg_slot_state st;
    sqlq_result rc = sqlq_pg_slot_state_get(db, n, &st, err);
    if (rc == SQLQ_OK && st.exists && st.elsewhere)
        return check_slot(db, n, err); /* another database's: not ours to drop */
    if (rc == SQLQ_OK && st.exists && st.active)
        return sqlq_error_set(err, SQLQ_E_CONFLICT, false,
                              "replication slot %s is in use by process %d (a running bridge): "
                              "stop it first", n->slot, st.active_pid);
    sqlq_param p[] = {sqlq_param_text(n->slot)};
    if (rc == SQLQ_OK && st.exists) {
        json_t *rows = NULL;
        rc = sqlq_db_query(db, "SELECT pg_drop_replication_slot(?) IS NULL AS dropped", p, 1,
                           &rows, err);
        json_decref(rows);
        if (rc == SQLQ_OK)
            line(lines, "replication slot %s: dropped", n->slot);
    }
    int64_t others = 0;
    char like[80];
    snprintf(like, sizeof like, "%s\\_%%", n->publication);
    sqlq_param q[] = {sqlq_param_text(like)};
    if (rc == SQLQ_OK)
        rc = sqlq_db_query_int(db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name "
                                   "LIKE ? AND database = current_database()", q, 1, &others,
                               err);
    if (rc == SQLQ_OK && others > 0) {
        line(lines, "publication %s kept: another bridge name's slot of the table uses it",
             n->publication);
        return SQLQ_OK;
    }
    char ddl[120];
    snprintf(ddl, sizeof ddl, "DROP PUBLICATION IF EXISTS \"%s\"", n->publication);
    if (rc == SQLQ_OK)
        rc = sqlq_db_exec(db, ddl, NULL, 0, NULL, err);
    if (rc == SQLQ_OK)
        line(lines, "publication %s: dropped", n->publication);
    return rc;
}
