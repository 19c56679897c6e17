#include "preflight.h"

#include "capture.h"
#include "db.h"
#include "fault.h"
#include "queue_client.h"
#include "route_filter.h"
#include "table.h"
#include "term_text.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* One result line. what holds table and column names and detail the database's or the
 * service's words: both are shown escaped (term_text.h), so a name with an ESC or a newline in
 * it cannot drive the terminal or fake a line. */
static void report(FILE *out, bool ok, const char *what, const sqlq_error *err)
{
    char raw[700] = "", detail[SQLQ_TERM_NAME_MAX], shown[SQLQ_TERM_NAME_MAX];
    if (err && err->code != SQLQ_OK)
        sqlq_error_format(err, raw, sizeof(raw));
    sqlq_term_text_line(raw, detail, sizeof(detail));
    fprintf(out, "%-4s %s%s%s\n", ok ? "ok" : "FAIL", sqlq_term_text_name(what, shown, sizeof(shown)),
            detail[0] ? ": " : "", detail);
}

/* Every column --columns / --exclude-columns names exists (what the route checks at start). */
static int check_columns(sqlq_db *db, const sqlq_route_config *r, FILE *out)
{
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_route_filter_parse(r->columns, r->exclude_columns, NULL, &f, &err) != SQLQ_OK || f.ncolumns == 0) {
        sqlq_route_filter_free(&f);
        return 0; /* nothing named (a bad value was refused with the settings) */
    }
    sqlq_table_name tn;
    sqlq_table *t = NULL;
    const char *unknown = NULL;
    bool ok = sqlq_table_name_parse(r->table, &tn, &err) == SQLQ_OK &&
              sqlq_table_describe_any(db, &tn, &t, &err) == SQLQ_OK;
    for (size_t i = 0; ok && i < f.ncolumns && !unknown; i++) {
        bool found = false;
        for (size_t j = 0; j < t->ncolumns && !found; j++)
            found = strcmp(t->columns[j].name, f.columns[i]) == 0;
        unknown = found ? NULL : f.columns[i];
    }
    if (ok && unknown) {
        sqlq_error_set(&err, SQLQ_E_INVALID, false, "no column '%s'", unknown);
        ok = false;
    }
    char what[400];
    snprintf(what, sizeof(what), "table %s: every column of %s exists", r->table,
             f.exclude ? "exclude_columns" : "columns");
    report(out, ok, what, &err);
    sqlq_table_free(t);
    sqlq_route_filter_free(&f);
    return ok ? 0 : 1;
}

static int check_database(sqlq_db *db, const sqlq_route_config *r, FILE *out, int *config_problems)
{
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.bridge_name = r->bridge_name;
    cc.table = r->table;
    cc.source = r->source;
    cc.max_batch_size = r->max_batch_size;
    cc.lease_s = r->lease_s;
    cc.max_attempts = r->max_attempts;
    cc.cursor_column = r->cursor_column;
    cc.soft_delete_column = r->soft_delete_column;
    cc.key_columns = r->key_columns;
    cc.safety_lag_ms = r->safety_lag_ms;
    cc.where = r->where;
    cc.changed = r->changed;
    cc.before_image = r->before_image;
    sqlq_error err;
    sqlq_error_clear(&err);
    char what[600];
    sqlq_result rc = sqlq_capture_check(db, &cc, &err);
    bool ok = rc == SQLQ_OK;
    /* a failure names only the table: the error says which check failed (not as if the
     * others had passed) */
    if (ok)
        snprintf(what, sizeof(what), "table %s: exists, has a key, %s", r->table,
                 r->source == SQLQ_SOURCE_CURSOR    ? "cursor column is safe"
                 : r->source == SQLQ_SOURCE_LOGICAL ? "wal_level logical, REPLICATION, replica "
                                                      "identity, publication and slot usable"
                                                    : "change capture installed");
    else
        snprintf(what, sizeof(what), "table %s", r->table);
    report(out, ok, what, &err);
    /* a setting the database cannot serve (changed / before_image without the setup option):
     * a configuration error, as the bridge says (exit 2) */
    if (!ok && rc == SQLQ_E_UNSUPPORTED && config_problems)
        (*config_problems)++;
    return ok ? check_columns(db, r, out) : 1;
}

/* The value of key in an ODBC connection string ("K=V;K={V;…}"), into out; false if absent. */
static bool conn_value(const char *conn, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);
    for (const char *p = conn; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *eq = strchr(p, '=');
        if (!eq)
            return false;
        const char *v = eq + 1, *end;
        if (*v == '{') {
            end = strchr(v + 1, '}');
            end = end ? end : v + strlen(v);
            v++;
        } else {
            end = v + strcspn(v, ";");
        }
        if ((size_t)(eq - p) == klen && strncasecmp(p, key, klen) == 0) {
            snprintf(out, size, "%.*s", (int)(end - v), v);
            return true;
        }
        p = *end == '}' ? end + 1 : end;
    }
    return false;
}

/* A driver that creates a missing database file on connect (the dialect's file_driver): a
 * check that changes nothing must not, so such a path that does not exist is reported instead.
 * The dialect of that file, or NULL. */
static const sqlq_dialect *file_missing(const char *conn, char *path, size_t size)
{
    char driver[128];
    const sqlq_dialect *d = conn_value(conn, "Driver", driver, sizeof(driver))
                                ? sqlq_dialect_of_file_driver(driver)
                                : NULL;
    if (!d || !conn_value(conn, "Database", path, size) || !path[0] ||
        strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
        return NULL;
    struct stat st;
    return stat(path, &st) != 0 && errno == ENOENT ? d : NULL;
}

/* The queue answers with these credentials. A failure is explained as the bridge explains it
 * (retry/fault.h: "SAS expired at …", "key rejected: …", the permission missing), followed by
 * the service's answer; a SAS past its expiry fails the check whatever the service said. */
static int check_queue(sqlq_queue_client *qc, const sqlq_account *account, const char *queue,
                       FILE *out)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    bool exists = false;
    char what[300];
    snprintf(what, sizeof(what), "queue %s: reachable with these credentials", queue);
    bool failed = sqlq_queue_exists(qc, queue, &exists, &err) != SQLQ_OK;
    int64_t now = (int64_t)time(NULL);
    bool expired = sqlq_fault_sas_expired(account->sas, now);
    sqlq_fault_kind kind = expired ? SQLQ_FAULT_AUTHENTICATION
                                   : sqlq_fault_classify(&err);
    if (failed && kind == SQLQ_FAULT_PERMISSION) {
        /* The service checked the credential and only refused reading metadata. */
        char code[SQLQ_TERM_NAME_MAX];
        fprintf(out, "note queue %s: these credentials may not read its metadata (%s): fine for the "
                     "bridge, which needs only add (sp=a); the queue must then exist already\n",
                queue, sqlq_term_text_name(err.azure_code, code, sizeof(code)));
        return 0;
    }
    if (failed || expired) {
        sqlq_fault_context c = {"get queue properties", queue, err.http_status, err.azure_code, account->sas, now,
                                err.message};
        char cause[400], line[800];
        sqlq_fault_describe(kind, &c, cause, sizeof(cause));
        snprintf(line, sizeof(line), "%s: %s", what, cause);
        report(out, false, line, failed ? &err : NULL);
        return 1;
    }
    report(out, true, what, NULL);
    if (!exists)
        fprintf(out, "note queue %s does not exist yet: the bridge creates it (needs the create "
                     "permission then)\n",
                queue);
    return 0;
}

/* One queue of a shard set, with its own account's credential when it names one. */
static int check_shard(const sqlq_queue_options *qo, const sqlq_account *account,
                       const sqlq_route_config *route, size_t k, sqlq_queue_client *qc, FILE *out)
{
    const sqlq_account *a = route->shard_accounts[k];
    if (!a || a == account)
        return check_queue(qc, account, route->shard_queues[k], out);
    sqlq_queue_client *own = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_queue_client_create(a, qo, &own, &err) != SQLQ_OK) {
        report(out, false, "queue service: client", &err);
        return 1;
    }
    int problems = check_queue(own, a, route->shard_queues[k], out);
    sqlq_queue_client_destroy(own);
    return problems;
}

int sqlq_preflight_run(const char *db_connection, const sqlq_account *account,
                       sqlq_encoding encoding, const sqlq_route_config *routes, size_t nroutes,
                       FILE *out, int *out_config_problems)
{
    if (out_config_problems)
        *out_config_problems = 0;
    int problems = 0;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_db *db = NULL;
    char path[1024];
    const sqlq_dialect *missing = file_missing(db_connection, path, sizeof(path));
    if (missing) {
        char shown[SQLQ_TERM_NAME_MAX];
        fprintf(out, "FAIL database: the %s file %s does not exist (not created: config "
                     "check changes nothing; is the path right?)\n",
                missing->title, sqlq_term_text_name(path, shown, sizeof(shown)));
        problems++;
    } else if (sqlq_db_connect(db_connection, &db, &err) != SQLQ_OK) {
        report(out, false, "database: connect", &err);
        problems++;
    } else {
        char what[160];
        snprintf(what, sizeof(what), "database: connected (%s)", sqlq_db_dbms_name(db));
        report(out, true, what, NULL);
        for (size_t i = 0; i < nroutes; i++)
            problems += check_database(db, &routes[i], out, out_config_problems);
        sqlq_db_close(db);
    }

    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    qo.encoding = encoding;
    /* A check answers quickly: one short retry budget instead of the daemon's patience. */
    qo.retry.max_total_ms = 5000;
    qo.timeout_ms = 10000;
    sqlq_queue_client *qc = NULL;
    sqlq_error_clear(&err);
    if (sqlq_queue_client_create(account, &qo, &qc, &err) != SQLQ_OK) {
        report(out, false, "queue service: client", &err);
        return problems + 1;
    }
    for (size_t i = 0; i < nroutes; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || strcmp(routes[j].queue, routes[i].queue) == 0;
        if (!seen && routes[i].nshards == 0)
            problems += check_queue(qc, account, routes[i].queue, out);
        for (size_t k = 0; !seen && k < routes[i].nshards; k++)
            problems += check_shard(&qo, account, &routes[i], k, qc, out);
    }
    sqlq_queue_client_destroy(qc);
    return problems;
}
