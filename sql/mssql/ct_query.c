#include "ct_query.h"

#include "capture_stop.h"
#include "sql_text.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool plain_type(const char *t)
{
    if (!*t)
        return false;
    for (const char *p = t; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_') || (unsigned char)*p >= 0x80)
            return false;
    return true;
}

static bool is_one_of(const char *t, const char *const *names)
{
    for (; *names; names++)
        if (strcasecmp(t, *names) == 0)
            return true;
    return false;
}

void sqlq_ct_type_decl(const char *type, long max_length, int precision, int scale, char *out,
                       size_t size)
{
    static const char *const wide[] = {"nvarchar", "nchar", NULL};
    static const char *const narrow[] = {"varchar", "char", "varbinary", "binary", NULL};
    static const char *const exact[] = {"decimal", "numeric", NULL};
    static const char *const frac[] = {"datetime2", "time", "datetimeoffset", NULL};
    char name[300];
    if (plain_type(type)) {
        snprintf(name, sizeof(name), "%s", type);
    } else {
        size_t n = 0;
        name[n++] = '[';
        for (const char *p = type; *p && n + 3 < sizeof(name); p++) {
            if (*p == ']')
                name[n++] = ']';
            name[n++] = *p;
        }
        name[n++] = ']';
        name[n] = '\0';
    }
    if (is_one_of(type, wide) || is_one_of(type, narrow)) {
        long len = is_one_of(type, wide) && max_length > 0 ? max_length / 2 : max_length;
        if (max_length < 0)
            snprintf(out, size, "%s(max)", name);
        else
            snprintf(out, size, "%s(%ld)", name, len > 0 ? len : 1);
    } else if (is_one_of(type, exact)) {
        snprintf(out, size, "%s(%d,%d)", name, precision, scale);
    } else if (is_one_of(type, frac)) {
        snprintf(out, size, "%s(%d)", name, scale);
    } else {
        snprintf(out, size, "%s", name);
    }
}

const char *sqlq_ct_info_sql(void)
{
    return "SET NOCOUNT ON; DECLARE @t nvarchar(600) = ?; "
           "SELECT CASE WHEN EXISTS (SELECT 1 FROM sys.change_tracking_tables "
           "WHERE object_id = OBJECT_ID(@t)) THEN 1 ELSE 0 END AS enabled, "
           "CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(@t)) AS min_valid, "
           "CHANGE_TRACKING_CURRENT_VERSION() AS current_version";
}

const char *sqlq_ct_track_columns_sql(void)
{
    return "SET NOCOUNT ON; DECLARE @t nvarchar(600) = ?; "
           "SELECT COALESCE((SELECT CAST(is_track_columns_updated_on AS int) FROM "
           "sys.change_tracking_tables WHERE object_id = OBJECT_ID(@t)), -1) AS tracked";
}

sqlq_result sqlq_ct_track_columns_enable_sql(const sqlq_table_name *t, char **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_sql_text quoted;
    sqlq_sql_text_init(&quoted, &sqlq_dialect_mssql);
    sqlq_sql_text_table(&quoted, t);
    char *name = NULL;
    sqlq_result r = sqlq_sql_text_take(&quoted, &name, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, &sqlq_dialect_mssql);
    sqlq_sql_text_add(&q, "IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_tables WHERE object_id "
                          "= OBJECT_ID(");
    sqlq_sql_text_literal(&q, name);
    sqlq_sql_text_add(&q, ")) ALTER TABLE %s ENABLE CHANGE_TRACKING WITH (TRACK_COLUMNS_UPDATED = "
                          "ON)", name);
    free(name);
    return sqlq_sql_text_take(&q, out, err);
}

sqlq_result sqlq_ct_enable_sql(const sqlq_table_name *t, int retention_days, char **out_database,
                               char **out_table, sqlq_error *err)
{
    *out_database = *out_table = NULL;
    if (retention_days < 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "change retention must be >= 1 day");
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, &sqlq_dialect_mssql);
    sqlq_sql_text_add(&q,
                      "IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_databases "
                      "WHERE database_id = DB_ID()) ALTER DATABASE CURRENT SET CHANGE_TRACKING = ON "
                      "(CHANGE_RETENTION = %d DAYS, AUTO_CLEANUP = ON)",
                      retention_days);
    sqlq_result r = sqlq_sql_text_take(&q, out_database, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text_init(&q, &sqlq_dialect_mssql);
    sqlq_sql_text quoted;
    sqlq_sql_text_init(&quoted, &sqlq_dialect_mssql);
    sqlq_sql_text_table(&quoted, t);
    char *name = NULL;
    r = sqlq_sql_text_take(&quoted, &name, err);
    if (r == SQLQ_OK) {
        sqlq_sql_text_add(&q, "IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_tables "
                              "WHERE object_id = OBJECT_ID(");
        sqlq_sql_text_literal(&q, name);
        sqlq_sql_text_add(&q, ")) ALTER TABLE %s ENABLE CHANGE_TRACKING", name);
        r = sqlq_sql_text_take(&q, out_table, err);
    } else {
        sqlq_sql_text_free(&q);
    }
    free(name);
    if (r != SQLQ_OK) {
        free(*out_database);
        *out_database = NULL;
    }
    return r;
}

sqlq_result sqlq_ct_applock_sql(int timeout_ms, char **out, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, &sqlq_dialect_mssql);
    sqlq_sql_text_add(&q,
                      "SET NOCOUNT ON; DECLARE @rc int; EXEC @rc = sp_getapplock "
                      "@Resource = ?, @LockMode = 'Exclusive', @LockOwner = 'Transaction', "
                      "@LockTimeout = %d; IF @rc < 0 THROW 51000, "
                      "'sqlq: could not get the app lock of this bridge and table', 1;",
                      timeout_ms < 0 ? 0 : timeout_ms);
    return sqlq_sql_text_take(&q, out, err);
}

sqlq_result sqlq_ct_retention_check(const char *bridge, const char *table_key, int64_t sync,
                                    int64_t min_valid, bool allow_gap, int64_t *out_sync,
                                    bool *out_gap, sqlq_error *err)
{
    *out_sync = sync;
    *out_gap = false;
    if (sync >= min_valid)
        return SQLQ_OK;
    if (allow_gap) {
        *out_sync = min_valid;
        *out_gap = true;
        return SQLQ_OK;
    }
    sqlq_result r = sqlq_error_set(
        err, SQLQ_E_INVALID, false,
        "bridge %s, table %s: changes were lost to change-tracking retention (sync version %" PRId64
        " < CHANGE_TRACKING_MIN_VALID_VERSION %" PRId64 "): re-send the table with `sqlq backfill "
        "--table %s`, then start the bridge with --allow-retention-gap to continue from version "
        "%" PRId64 "; raise CHANGE_RETENTION to avoid it",
        bridge, table_key, sync, min_valid, table_key, min_valid);
    sqlq_error_reason(err, SQLQ_STOP_RETENTION);
    return r;
}
