#include "version_guard.h"

#include "dialect_parts.h"
#include "json_int.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The key_json column's type: any key's canonical JSON (the dialect's text of any length). */
static const char *key_json_type(const sqlq_dialect *d)
{
    return d->text_any_length;
}

sqlq_result sqlq_version_guard_create_sql_if_not_exists(const sqlq_dialect *d,
                                                        const sqlq_table_name *state, sqlq_buf *sql)
{
    sqlq_result r = sqlq_buf_adds(sql, "CREATE TABLE IF NOT EXISTS ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, sql);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(sql, " (target_table VARCHAR(256) NOT NULL, key_hash CHAR(64) NOT "
                                 "NULL, version BIGINT NOT NULL, key_json %s NULL, PRIMARY KEY "
                                 "(target_table, key_hash))",
                            key_json_type(d));
    return r;
}

/* A state table made before key_json existed gets it (its rows fill it at their next change). */
static sqlq_result add_key_json(sqlq_db *db, const sqlq_table_name *state, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_buf probe, alter;
    sqlq_buf_init(&probe, 0);
    sqlq_buf_init(&alter, 0);
    sqlq_result r = sqlq_buf_adds(&probe, "SELECT count(key_json) FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, &probe);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&probe, " WHERE 1 = 0");
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&alter, "ALTER TABLE ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, &alter);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(&alter, " %skey_json %s NULL", d->add_column, key_json_type(d));
    if (r != SQLQ_OK)
        r = sqlq_error_set(err, r, false, "version table name is not usable");
    int64_t n = 0;
    sqlq_error probe_err;
    sqlq_error_clear(&probe_err);
    if (r == SQLQ_OK && sqlq_db_query_int(db, sqlq_buf_str(&probe), NULL, 0, &n, &probe_err) !=
                            SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&alter), NULL, 0, NULL, err);
    sqlq_buf_free(&probe);
    sqlq_buf_free(&alter);
    return r;
}

/* The claim's answer is all that tells a newer change from an older one: checked on this
 * connection before any message relies on it, by claiming one version twice in a transaction
 * rolled back. A driver counting the rows a statement found rather than those it changed
 * (MariaDB Connector/ODBC with FOUND_ROWS) answers "newer" twice: refused, loudly. */
static sqlq_result check_claim_answers(sqlq_db *db, const sqlq_table_name *state, sqlq_error *err)
{
    static const char probe[] = "sqlq version guard probe";
    bool first = false, second = true;
    sqlq_result r = sqlq_db_begin(db, err);
    if (r == SQLQ_OK)
        r = sqlq_version_guard_claim(db, state, "", probe, "{}", 1, &first, err);
    if (r == SQLQ_OK)
        r = sqlq_version_guard_claim(db, state, "", probe, "{}", 1, &second, err);
    sqlq_db_rollback(db);
    if (r != SQLQ_OK || (first && !second))
        return r;
    char shown[600];
    sqlq_table_name_format(state, shown, sizeof shown);
    const char *option = sqlq_db_dialect(db)->found_rows_option;
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "version table %s: the connection reports the rows a statement found, "
                          "not those it changed (a claim of version 1 answered %s, then %s), so "
                          "an older change could not be told from a newer one and would "
                          "overwrite it; remove %s from the connection string",
                          shown, first ? "newer" : "not newer", second ? "newer" : "not newer",
                          option ? option : "the driver option that counts rows found");
}

sqlq_result sqlq_version_guard_install(sqlq_db *db, const sqlq_table_name *state, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    sqlq_result r = d->version_guard_create_sql(d, state, &sql);
    if (r != SQLQ_OK) {
        sqlq_buf_free(&sql);
        return sqlq_error_set(err, r, false, "version table name is not usable");
    }
    r = sqlq_db_exec(db, sqlq_buf_str(&sql), NULL, 0, NULL, err);
    sqlq_buf_free(&sql);
    if (r == SQLQ_OK)
        r = add_key_json(db, state, err);
    return r == SQLQ_OK ? check_claim_answers(db, state, err) : r;
}

sqlq_result sqlq_version_guard_claim_sql_merge(const sqlq_dialect *d, const sqlq_table_name *state,
                                               sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "MERGE INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out,
                          " WITH (HOLDLOCK) AS cur USING (SELECT ? AS target_table, ? AS key_hash, "
                          "? AS version, ? AS key_json) AS src ON (cur.target_table = "
                          "src.target_table AND cur.key_hash = src.key_hash) WHEN MATCHED AND "
                          "cur.version < src.version THEN UPDATE SET version = src.version, "
                          "key_json = COALESCE(cur.key_json, src.key_json) WHEN NOT MATCHED THEN "
                          "INSERT (target_table, key_hash, version, key_json) VALUES "
                          "(src.target_table, src.key_hash, src.version, src.key_json);");
    return r;
}

sqlq_result sqlq_version_guard_claim_sql_on_conflict(const sqlq_dialect *d,
                                                     const sqlq_table_name *state, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "INSERT INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AS cur (target_table, key_hash, version, key_json) VALUES (?, ?, "
                               "?, ?) ON CONFLICT (target_table, key_hash) DO UPDATE SET "
                               "version = excluded.version, key_json = COALESCE(cur.key_json, "
                               "excluded.key_json) WHERE cur.version < excluded.version");
    return r;
}

sqlq_result sqlq_version_guard_claim_sql(const sqlq_dialect *d, const sqlq_table_name *state,
                                         sqlq_buf *out, sqlq_error *err)
{
    sqlq_result r = d->version_guard_claim_sql(d, state, out);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "version table name is not usable");
    return SQLQ_OK;
}

void sqlq_version_guard_key_hash(const char *key_json, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)key_json, strlen(key_json), md);
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

sqlq_result sqlq_version_guard_claim(sqlq_db *db, const sqlq_table_name *state, const char *target,
                                     const char *key_hash, const char *key_json, int64_t version,
                                     bool *out_newer, sqlq_error *err)
{
    *out_newer = false;
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    sqlq_result r = sqlq_version_guard_claim_sql(sqlq_db_dialect(db), state, &sql, err);
    sqlq_param p[4] = {sqlq_param_text(target), sqlq_param_text(key_hash), sqlq_param_int(version),
                       sqlq_param_text(key_json)};
    long long rows = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), p, 4, &rows, err);
    sqlq_buf_free(&sql);
    *out_newer = r == SQLQ_OK && rows > 0;
    return r;
}

/* "<verb> <state> WHERE target_table = ?[ AND key_hash = ?]" */
static sqlq_result keyed_sql(const sqlq_dialect *d, const char *verb, const sqlq_table_name *state,
                             bool one_key, sqlq_buf *out, sqlq_error *err)
{
    sqlq_result r = sqlq_buf_adds(out, verb);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " WHERE target_table = ?");
    if (r == SQLQ_OK && one_key)
        r = sqlq_buf_adds(out, " AND key_hash = ?");
    return r == SQLQ_OK ? r : sqlq_error_set(err, r, false, "version table name is not usable");
}

sqlq_result sqlq_version_guard_stored(sqlq_db *db, const sqlq_table_name *state, const char *target,
                                      const char *key_hash, int64_t *out_version, bool *out_found,
                                      sqlq_error *err)
{
    *out_found = false;
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    sqlq_result r = keyed_sql(sqlq_db_dialect(db), "SELECT version FROM ", state, true, &sql, err);
    sqlq_param p[2] = {sqlq_param_text(target), sqlq_param_text(key_hash)};
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sqlq_buf_str(&sql), p, 2, &rows, err);
    sqlq_buf_free(&sql);
    json_t *v = json_object_get(json_array_get(rows, 0), "version");
    if (r == SQLQ_OK && v) {
        *out_found = true;
        *out_version = 0;
        (void)sqlq_json_int64(v, out_version);
    }
    json_decref(rows);
    return r;
}

sqlq_result sqlq_version_guard_reset(sqlq_db *db, const sqlq_table_name *state, const char *target,
                                     const char *key_hash, long long *out_rows, sqlq_error *err)
{
    *out_rows = 0;
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    sqlq_result r =
        keyed_sql(sqlq_db_dialect(db), "DELETE FROM ", state, key_hash != NULL, &sql, err);
    sqlq_param p[2] = {sqlq_param_text(target), sqlq_param_text(key_hash ? key_hash : "")};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), p, key_hash ? 2 : 1, out_rows, err);
    sqlq_buf_free(&sql);
    return r;
}
