#include "pg_listen.h"

#include "conn_string.h"
#include "log.h"

#include <libpq-fe.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_FIRST_MS 1000u
#define RETRY_MAX_MS 30000u
#define STABLE_MS 30000u /* a connection lost after this long is retried at once */

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
#define NFIXED 6 /* application_name, connect_timeout, keepalives (4 keys) */

struct sqlq_pg_listen {
    char *channel;
    char *values[NPARAMS]; /* NULL: libpq's default */
    PGconn *conn;
    uint64_t next_try_ms;  /* while down: when to connect again */
    uint64_t retry_ms;     /* the back-off step after the next failure */
    uint64_t up_since_ms;  /* when the current connection began to listen */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static char *last_value(const char *conn, const char *const *keys)
{
    char **list = sqlq_conn_string_values(conn, keys);
    char *v = NULL;
    for (size_t i = 0; list && list[i]; i++)
        v = list[i];
    v = v ? strdup(v) : NULL;
    sqlq_conn_string_list_free(list);
    return v;
}

sqlq_result sqlq_pg_listen_create(const char *odbc_conn, const char *channel, sqlq_pg_listen **out,
                                  sqlq_error *err)
{
    *out = NULL;
    sqlq_pg_listen *l = calloc(1, sizeof(*l));
    if (!l || !(l->channel = strdup(channel))) {
        free(l);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    for (size_t i = 0; i < NPARAMS; i++)
        l->values[i] = last_value(odbc_conn, params[i].odbc);
    l->retry_ms = 0; /* the first connection: at once */
    *out = l;
    return SQLQ_OK;
}

void sqlq_pg_listen_destroy(sqlq_pg_listen *l)
{
    if (!l)
        return;
    if (l->conn)
        PQfinish(l->conn);
    for (size_t i = 0; i < NPARAMS; i++)
        free(l->values[i]);
    free(l->channel);
    free(l);
}

int sqlq_pg_listen_backend_pid(const sqlq_pg_listen *l)
{
    return l && l->conn ? PQbackendPID(l->conn) : 0;
}

/* Drop the connection and say when to try again: at once after losing a connection that had
 * been up for STABLE_MS, else after the back-off step, which doubles up to RETRY_MAX_MS (a
 * listener killed again and again, or a server that refuses it, costs a connection attempt
 * per step, not a poll storm: each new LISTEN wakes the route once). */
static void went_down(sqlq_pg_listen *l, const char *event, const char *why, bool lost)
{
    uint64_t now = now_ms();
    if (lost && now - l->up_since_ms >= STABLE_MS)
        l->retry_ms = 0;
    uint64_t delay = l->retry_ms;
    SQLQ_WARN(event, "channel=%s retry_ms=%llu error=\"%s\"", l->channel, (unsigned long long)delay,
              why);
    if (l->conn)
        PQfinish(l->conn);
    l->conn = NULL;
    l->next_try_ms = now + delay;
    l->retry_ms = delay == 0 ? RETRY_FIRST_MS : delay * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : delay * 2;
}

/* libpq prints server notices (such as the FATAL of pg_terminate_backend) on stderr by default;
 * the loss is logged by went_down instead. */
static void quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* The libpq message without its trailing newline, for one log line. */
static void message_of(PGconn *c, char *out, size_t size)
{
    snprintf(out, size, "%s", c ? PQerrorMessage(c) : "out of memory");
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '"')
            *p = ' ';
}

static bool listen_on(sqlq_pg_listen *l)
{
    char *ident = PQescapeIdentifier(l->conn, l->channel, strlen(l->channel));
    size_t n = ident ? strlen(ident) + 8 : 0;
    char *sql = ident ? malloc(n) : NULL;
    PGresult *res = NULL;
    if (sql) {
        snprintf(sql, n, "LISTEN %s", ident);
        res = PQexec(l->conn, sql);
    }
    bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    free(sql);
    PQfreemem(ident);
    return ok;
}

static bool connect_and_listen(sqlq_pg_listen *l)
{
    const char *keys[NPARAMS + NFIXED + 1], *vals[NPARAMS + NFIXED + 1];
    size_t k = 0;
    for (size_t i = 0; i < NPARAMS; i++)
        if (l->values[i]) {
            keys[k] = params[i].keyword;
            vals[k++] = l->values[i];
        }
    static const char *const fixed[NFIXED][2] = {
        {"application_name", "sqlq-listen"}, {"connect_timeout", "5"}, {"keepalives", "1"},
        {"keepalives_idle", "30"},           {"keepalives_interval", "10"}, {"keepalives_count", "3"}};
    for (size_t i = 0; i < NFIXED; i++) {
        keys[k] = fixed[i][0];
        vals[k++] = fixed[i][1];
    }
    keys[k] = vals[k] = NULL;
    l->conn = PQconnectdbParams(keys, vals, 0);
    if (l->conn)
        PQsetNoticeProcessor(l->conn, quiet_notice, NULL);
    char why[256];
    if (!l->conn || PQstatus(l->conn) != CONNECTION_OK || !listen_on(l)) {
        message_of(l->conn, why, sizeof(why));
        went_down(l, "listen_failed", why, false);
        return false;
    }
    SQLQ_INFO("listen_started", "channel=%s pid=%d", l->channel, PQbackendPID(l->conn));
    l->up_since_ms = now_ms();
    return true;
}

/* Consume every notification that has arrived; false when the connection broke. */
static bool drain(sqlq_pg_listen *l, bool *notified)
{
    if (!PQconsumeInput(l->conn) || PQstatus(l->conn) != CONNECTION_OK)
        return false;
    PGnotify *n;
    while ((n = PQnotifies(l->conn)) != NULL) {
        *notified = true;
        PQfreemem(n);
    }
    return true;
}

sqlq_pg_listen_event sqlq_pg_listen_wait(sqlq_pg_listen *l, uint64_t timeout_ms)
{
    if (!l->conn) {
        uint64_t now = now_ms();
        if (now < l->next_try_ms) {
            uint64_t left = l->next_try_ms - now;
            sleep_ms(left < timeout_ms ? left : timeout_ms);
            return SQLQ_PG_LISTEN_DOWN;
        }
        return connect_and_listen(l) ? SQLQ_PG_LISTEN_NOTIFIED : SQLQ_PG_LISTEN_DOWN;
    }
    bool notified = false;
    struct pollfd pfd = {PQsocket(l->conn), POLLIN, 0};
    int rc = poll(&pfd, 1, (int)(timeout_ms > 60000 ? 60000 : timeout_ms));
    if (rc < 0 && errno == EINTR)
        return SQLQ_PG_LISTEN_TIMEOUT;
    if (rc != 0 && !drain(l, &notified)) {
        char why[256];
        message_of(l->conn, why, sizeof(why));
        went_down(l, "listen_lost", why, true);
        return SQLQ_PG_LISTEN_DOWN;
    }
    return notified ? SQLQ_PG_LISTEN_NOTIFIED : SQLQ_PG_LISTEN_TIMEOUT;
}
