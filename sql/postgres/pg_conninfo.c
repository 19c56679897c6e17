/* pg_conninfo: libpq connection parameters for the server a psqlODBC connection string names. */
#include "pg_conninfo.h"

#include "conn_string.h"
#include "log.h"

#include <libpq-fe.h>
#include <odbcinst.h>

#include <stdlib.h>
#include <string.h>

/* libpq keyword, then the psqlODBC keywords that give it (the last one given wins). */
static const char *const map_host[] = {"Server", "Servername", NULL};
static const char *const map_port[] = {"Port", NULL};
static const char *const map_db[] = {"Database", NULL};
static const char *const map_user[] = {"UID", "Username", "User", NULL};
static const char *const map_pwd[] = {"PWD", "Password", NULL};
static const char *const map_ssl[] = {"SSLMode", NULL};
static const struct {
    const char *keyword;
    const char *const *odbc;
} params[] = {{"host", map_host}, {"port", map_port}, {"dbname", map_db},
              {"user", map_user}, {"password", map_pwd}, {"sslmode", map_ssl}};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

struct sqlq_pg_conninfo {
    char *values[NPARAMS];   /* NULL: libpq's default */
    PQconninfoOption *pqopt; /* psqlODBC's pqopt={...}, parsed by libpq; NULL when none */
    char *dsn;
    bool known;
};

static char *last_value(const char *conn, const char *const *keys)
{
    char **list = sqlq_conn_string_values(conn, keys);
    char *v = NULL;
    for (size_t i = 0; list && list[i]; i++)
        v = list[i];
    v = v && v[0] ? strdup(v) : NULL; /* Server= (empty) names nothing */
    sqlq_conn_string_list_free(list);
    return v;
}

/* A value psqlODBC reads from the DSN's section of odbc.ini (unixODBC's ODBCINI, ~/.odbc.ini,
 * the system odbc.ini) when the connection string does not give it. */
static char *dsn_value(const char *dsn, const char *const *keys)
{
    char buf[512];
    for (size_t i = 0; keys[i]; i++) {
        buf[0] = '\0';
        int n = SQLGetPrivateProfileString(dsn, keys[i], "", buf, (int)sizeof(buf), "odbc.ini");
        if (n > 0 && buf[0])
            return strdup(buf);
    }
    return NULL;
}

/* psqlODBC's pqopt: libpq conninfo text ("sslrootcert=/x keepalives_idle=5"), often in braces. */
static PQconninfoOption *parse_pqopt(const char *conn)
{
    static const char *const key[] = {"pqopt", NULL};
    char *v = last_value(conn, key);
    if (!v)
        return NULL;
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '{' && v[n - 1] == '}') {
        memmove(v, v + 1, n - 2);
        v[n - 2] = '\0';
    }
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(v, &msg);
    if (!o)
        SQLQ_WARN("listen_pqopt_ignored", "error=\"%s\"", msg ? msg : "out of memory");
    PQfreemem(msg);
    free(v);
    return o;
}

static const char *pqopt_value(const sqlq_pg_conninfo *ci, const char *keyword)
{
    for (const PQconninfoOption *o = ci->pqopt; o && o->keyword; o++)
        if (o->val && o->val[0] && strcmp(o->keyword, keyword) == 0)
            return o->val;
    return NULL;
}

sqlq_result sqlq_pg_conninfo_create(const char *odbc_conn, sqlq_pg_conninfo **out,
                                    sqlq_error *err)
{
    static const char *const dsn_key[] = {"DSN", NULL};
    *out = NULL;
    sqlq_pg_conninfo *ci = calloc(1, sizeof(*ci));
    if (!ci)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < NPARAMS; i++)
        ci->values[i] = last_value(odbc_conn, params[i].odbc);
    ci->pqopt = parse_pqopt(odbc_conn);
    ci->dsn = last_value(odbc_conn, dsn_key);
    for (size_t i = 0; ci->dsn && i < NPARAMS; i++)
        if (!ci->values[i])
            ci->values[i] = dsn_value(ci->dsn, params[i].odbc);
    ci->known = ci->values[0] || pqopt_value(ci, "host") || pqopt_value(ci, "hostaddr") ||
                pqopt_value(ci, "service") || getenv("PGHOST") || getenv("PGSERVICE");
    *out = ci;
    return SQLQ_OK;
}

void sqlq_pg_conninfo_destroy(sqlq_pg_conninfo *ci)
{
    if (!ci)
        return;
    for (size_t i = 0; i < NPARAMS; i++)
        free(ci->values[i]);
    PQconninfoFree(ci->pqopt);
    free(ci->dsn);
    free(ci);
}

bool sqlq_pg_conninfo_known(const sqlq_pg_conninfo *ci) { return ci && ci->known; }
const char *sqlq_pg_conninfo_dsn(const sqlq_pg_conninfo *ci) { return ci ? ci->dsn : NULL; }

size_t sqlq_pg_conninfo_params(const sqlq_pg_conninfo *ci, const char *const (*extra)[2],
                               size_t nextra, const char **keys, const char **vals, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < NPARAMS && k + 1 < max; i++)
        if (ci->values[i]) {
            keys[k] = params[i].keyword;
            vals[k++] = ci->values[i];
        }
    /* pqopt after the mapped keywords: as in psqlODBC, its options win. */
    for (const PQconninfoOption *o = ci->pqopt; o && o->keyword && k + 1 < max; o++)
        if (o->val && o->val[0]) {
            keys[k] = o->keyword;
            vals[k++] = o->val;
        }
    for (size_t i = 0; i < nextra && k + 1 < max; i++) {
        keys[k] = extra[i][0];
        vals[k++] = extra[i][1];
    }
    keys[k] = vals[k] = NULL;
    return k;
}
