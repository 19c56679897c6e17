#include "pg_listen.h"

#include "clock.h"
#include "json_int.h"
#include "pg_internal.h"
#include "conn_string.h"
#include "change_log.h"
#include "log.h"
#include "pg_arm.h"
#include "pg_conninfo.h"

#include <libpq-fe.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_FIRST_MS 1000u
#define RETRY_MAX_MS 30000u
#define STABLE_MS 30000u /* a connection lost after this long is retried at once */
/* A pending arm waits for the wake-up lock at most this long, then is sent again. While it
 * waits, its statement's snapshot holds back the database's vacuum horizon (a backend waiting
 * for a lock in a SELECT keeps its xmin): behind another bridge instance that stays armed on a
 * quiet table, that would be for as long as the table stays quiet. Also what the session says
 * instead of a role's or database's lock_timeout or statement_timeout, which could otherwise
 * turn the wait into a loop of errors. */
#define ARM_LOCK_TIMEOUT "30s"
#define ARM_WAIT_LOG_MS 10000u /* a pending arm waiting this long is logged (info) */
#define LOCK_TIMEOUT_STATE "55P03" /* lock_not_available: lock_timeout ran out */
/* Lets the wake-up lock go (the session holds no other advisory lock). */
static const char UNLOCK_SQL[] = "SELECT pg_advisory_unlock_all()";

#define NFIXED 6 /* application_name, connect_timeout, keepalives (4 keys) */

struct sqlq_pg_listen {
    char *channel;
    sqlq_pg_conninfo *ci;      /* the server of the ODBC connection string */
    bool off;                  /* the server could not be determined: never connects */
    bool checked;              /* whether the trigger notifies was checked (at the first LISTEN) */
    bool said_silent;          /* wakeup_off said the trigger does not notify: say when it does */
    char *arm_sql;             /* NULL: never arms */
    char *peek_sql;            /* the sequence's last value alone (sqlq_pg_listen_peek) */
    sqlq_pg_arm arm;           /* the wake-up lock, and the arm or unlock in flight */
    bool peeking;              /* a peek is in flight */
    sqlq_pg_listen_event kept; /* a hint a peek read on its way, for the next check or wait */
    /* The answer of the statement in flight, as its results arrive. */
    int answers;  /* results read */
    int l_answer; /* which of them is the sequence's last value (0: none) */
    bool have_l, errored;
    int64_t l; /* the sequence's last value, when it came */
    char sqlstate[6];
    char error[200];
    PGconn *conn;
    uint64_t next_try_ms; /* while down: when to connect again */
    uint64_t retry_ms;    /* the back-off step after the next failure */
    uint64_t up_since_ms; /* when the current connection began to listen */
};

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Never libpq's defaults in silence (pg_conninfo.h): no server named, no listener. */
static void resolve_server(sqlq_pg_listen *l)
{
    if (sqlq_pg_conninfo_known(l->ci))
        return;
    const char *dsn = sqlq_pg_conninfo_dsn(l->ci);
    l->off = true;
    SQLQ_WARN("wakeup_off",
              "channel=%s dsn=%s reason=\"the PostgreSQL server of the connection string "
              "could not be determined (no Server/Servername%s)\" hint=\"name the server in the "
              "connection string (Server=...;Port=...), or set wakeup: false; the route polls at "
              "its interval\"",
              l->channel, dsn ? dsn : "-", dsn ? " in it nor in its odbc.ini section" : "");
}

sqlq_result sqlq_pg_listen_create(const char *odbc_conn, const char *channel,
                                  const sqlq_pg_listen_sql *sql, sqlq_pg_listen **out,
                                  sqlq_error *err)
{
    *out = NULL;
    sqlq_pg_listen *l = calloc(1, sizeof(*l));
    bool ok = l && (l->channel = strdup(channel)) != NULL;
    if (ok && sql && sql->arm && sql->peek) {
        l->arm_sql = strdup(sql->arm);
        l->peek_sql = strdup(sql->peek);
        ok = l->arm_sql && l->peek_sql;
    }
    if (!ok) {
        if (l) {
            free(l->channel);
            free(l->arm_sql);
            free(l->peek_sql);
        }
        free(l);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    sqlq_pg_arm_init(&l->arm);
    if (sqlq_pg_conninfo_create(odbc_conn, &l->ci, err) != SQLQ_OK) {
        sqlq_pg_listen_destroy(l);
        return SQLQ_E_NOMEM;
    }
    resolve_server(l);
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
    sqlq_pg_conninfo_destroy(l->ci);
    free(l->channel);
    free(l->arm_sql);
    free(l->peek_sql);
    free(l);
}

int sqlq_pg_listen_backend_pid(const sqlq_pg_listen *l)
{
    return l && l->conn ? PQbackendPID(l->conn) : 0;
}

bool sqlq_pg_listen_armed(const sqlq_pg_listen *l)
{
    return l && l->conn && l->arm.state == SQLQ_PG_ARM_ON;
}

/* Drop the connection and say when to try again: at once after losing a connection that had
 * been up for STABLE_MS, else after the back-off step, which doubles up to RETRY_MAX_MS (a
 * listener killed again and again, or a server that refuses it, costs a connection attempt
 * per step, not a poll storm: each new LISTEN wakes the route once). */
static void went_down(sqlq_pg_listen *l, const char *event, const char *why, bool lost)
{
    uint64_t now = sqlq_clock_mono_ms();
    if (lost && now - l->up_since_ms >= STABLE_MS)
        l->retry_ms = 0;
    uint64_t delay = l->retry_ms;
    SQLQ_WARN(event, "channel=%s retry_ms=%llu error=\"%s\"", l->channel, (unsigned long long)delay,
              why);
    if (l->conn)
        PQfinish(l->conn); /* the server lets the session's wake-up lock go */
    l->conn = NULL;
    sqlq_pg_arm_init(&l->arm);
    l->peeking = false;
    l->kept = SQLQ_PG_LISTEN_TIMEOUT;
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
    sqlq_log_one_line(out);
}

/* LISTEN, with the session's timeouts for the arm's wait (ARM_LOCK_TIMEOUT). */
static bool listen_on(sqlq_pg_listen *l)
{
    char *ident = PQescapeIdentifier(l->conn, l->channel, strlen(l->channel));
    size_t n = ident ? strlen(ident) + 96 : 0;
    char *sql = ident ? malloc(n) : NULL;
    PGresult *res = NULL;
    if (sql) {
        snprintf(sql, n, "SET lock_timeout = '" ARM_LOCK_TIMEOUT "'; SET statement_timeout = 0; "
                         "LISTEN %s", ident);
        res = PQexec(l->conn, sql);
    }
    bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    free(sql);
    PQfreemem(ident);
    return ok;
}

/* At the first LISTEN: whether the trigger notifies in this database (change_log.c,
 * pg_notify_sql). It stays silent where prepared transactions are allowed unless sqlq.notify
 * is on, and then the route polls at its interval: say so, and how to turn wake-ups on. */
static void check_notify(sqlq_pg_listen *l)
{
    l->checked = true;
    PGresult *res = PQexec(l->conn, "SELECT current_setting('max_prepared_transactions'), "
                                    "coalesce(current_setting('sqlq.notify', true), '')");
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        const char *mpt = PQgetvalue(res, 0, 0), *notify = PQgetvalue(res, 0, 1);
        l->said_silent = strcmp(notify, "off") == 0 || (strcmp(notify, "on") != 0 && strcmp(mpt, "0") != 0);
        if (strcmp(notify, "off") == 0)
            SQLQ_INFO("wakeup_off", "channel=%s reason=\"sqlq.notify is off\"", l->channel);
        else if (l->said_silent)
            SQLQ_WARN("wakeup_off",
                      "channel=%s max_prepared_transactions=%s sqlq.notify=%s reason=\"the server "
                      "allows prepared transactions, so the trigger does not NOTIFY (PREPARE "
                      "TRANSACTION refuses a transaction that did): the route polls at its "
                      "interval\" hint=\"when no writer of the table uses PREPARE TRANSACTION: "
                      "ALTER DATABASE %s SET sqlq.notify = on\"",
                      l->channel, mpt, notify[0] ? notify : "unset", PQdb(l->conn));
    }
    PQclear(res);
}

static bool connect_and_listen(sqlq_pg_listen *l)
{
    static const char *const fixed[NFIXED][2] = {
        {"application_name", "sqlq-listen"}, {"connect_timeout", "5"}, {"keepalives", "1"},
        {"keepalives_idle", "30"},           {"keepalives_interval", "10"}, {"keepalives_count", "3"}};
    const char *keys[SQLQ_PG_CONNINFO_MAX + NFIXED], *vals[SQLQ_PG_CONNINFO_MAX + NFIXED];
    sqlq_pg_conninfo_params(l->ci, fixed, NFIXED, keys, vals, SQLQ_PG_CONNINFO_MAX + NFIXED);
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
    if (!l->checked)
        check_notify(l);
    l->up_since_ms = sqlq_clock_mono_ms();
    sqlq_pg_arm_init(&l->arm);
    l->peeking = false;
    return true;
}

/* Whether a statement is in flight (one at a time: its answer comes before the next is sent). */
static bool in_flight(const sqlq_pg_listen *l)
{
    return l->peeking || l->arm.state == SQLQ_PG_ARM_PENDING ||
           l->arm.state == SQLQ_PG_ARM_RELEASING;
}

/* Send a statement whose answer is read later (pump); l_answer: which of its results is the
 * sequence's last value (0: none). */
static bool send(sqlq_pg_listen *l, const char *sql, int l_answer)
{
    l->answers = 0;
    l->l_answer = l_answer;
    l->have_l = l->errored = false;
    l->sqlstate[0] = l->error[0] = '\0';
    return PQsendQuery(l->conn, sql) == 1;
}

static void take_result(sqlq_pg_listen *l, PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        if (++l->answers == l->l_answer && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
            int64_t v = 0;
            l->have_l = sqlq_json_int64_text(PQgetvalue(res, 0, 0), &v);
            l->l = v;
        }
        return;
    }
    l->errored = true;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    snprintf(l->sqlstate, sizeof(l->sqlstate), "%s", state ? state : "");
    snprintf(l->error, sizeof(l->error), "%s", PQresultErrorMessage(res));
    sqlq_log_one_line(l->error);
}

/* The statement in flight has answered in full: what it tells (an arm's hint in *event), and
 * the unlock sent when due. false when the connection broke. */
static bool answered(sqlq_pg_listen *l, int64_t covered, sqlq_pg_listen_event *event)
{
    uint64_t now = sqlq_clock_mono_ms();
    bool unlock = false;
    if (l->peeking) {
        /* A hint only: versions taken since the poll, committed or about to be. */
        l->peeking = false;
        if (!l->errored && l->have_l && l->l > covered && *event == SQLQ_PG_LISTEN_TIMEOUT)
            *event = SQLQ_PG_LISTEN_UNSIGNALLED;
        if (l->errored)
            SQLQ_DEBUG("wakeup_peek_failed", "channel=%s sqlstate=%s error=\"%s\"", l->channel,
                       l->sqlstate, l->error);
    } else if (l->arm.state == SQLQ_PG_ARM_RELEASING) {
        if (l->errored)
            SQLQ_DEBUG("wakeup_unlock_failed", "channel=%s sqlstate=%s error=\"%s\"", l->channel,
                       l->sqlstate, l->error);
        sqlq_pg_arm_released(&l->arm);
    } else if (l->arm.state == SQLQ_PG_ARM_PENDING && !l->errored && l->have_l) {
        uint64_t waited = sqlq_pg_arm_waited_ms(&l->arm, now);
        bool logged = l->arm.wait_logged;
        int64_t l_prev = l->arm.last_l;
        bool hint = sqlq_pg_arm_granted(&l->arm, l->l, covered, &unlock);
        if (hint && *event == SQLQ_PG_LISTEN_TIMEOUT)
            *event = SQLQ_PG_LISTEN_UNSIGNALLED;
        SQLQ_TRACE("wakeup_armed", "channel=%s last_version=%" PRId64 " covered=%" PRId64
                   " previous=%" PRId64 " hint=%d waited_ms=%llu", l->channel, l->l, covered,
                   l_prev, (int)hint, (unsigned long long)waited);
        if (logged)
            SQLQ_INFO("wakeup_armed", "channel=%s waited_ms=%llu", l->channel,
                      (unsigned long long)waited);
    } else if (l->arm.state == SQLQ_PG_ARM_PENDING) {
        bool timeout = strcmp(l->sqlstate, LOCK_TIMEOUT_STATE) == 0;
        uint64_t retry = 0;
        unlock = sqlq_pg_arm_failed(&l->arm, timeout, now, &retry);
        if (timeout)
            SQLQ_DEBUG("wakeup_arm_timeout", "channel=%s note=\"the wake-up lock was not granted "
                       "within lock_timeout " ARM_LOCK_TIMEOUT ": asked again\"", l->channel);
        else
            SQLQ_WARN("wakeup_arm_failed",
                      "channel=%s retry_ms=%llu sqlstate=%s error=\"%s\" note=\"writers notify "
                      "only while a bridge holds the wake-up lock: until it is taken the route "
                      "polls at its interval\"",
                      l->channel, (unsigned long long)retry, l->errored ? l->sqlstate : "-",
                      l->errored ? l->error : "no version read");
    }
    return !unlock || send(l, UNLOCK_SQL, 0);
}

/* Read what has arrived, never blocking: the answers of the statement in flight, then the
 * notifications (a hint, which lets the wake-up lock go). *event: NOTIFIED on a notification,
 * UNSIGNALLED on an arm's hint. false when the connection broke. */
static bool pump(sqlq_pg_listen *l, int64_t covered, sqlq_pg_listen_event *event)
{
    if (l->kept != SQLQ_PG_LISTEN_TIMEOUT) { /* read by a peek on its way */
        *event = l->kept;
        l->kept = SQLQ_PG_LISTEN_TIMEOUT;
    }
    if (!PQconsumeInput(l->conn) || PQstatus(l->conn) != CONNECTION_OK)
        return false;
    while (in_flight(l) && !PQisBusy(l->conn)) {
        PGresult *res = PQgetResult(l->conn);
        if (res) {
            take_result(l, res);
            PQclear(res);
            continue;
        }
        if (!answered(l, covered, event))
            return false;
    }
    bool notified = false;
    PGnotify *n;
    while ((n = PQnotifies(l->conn)) != NULL) {
        notified = true;
        PQfreemem(n);
    }
    if (notified && l->said_silent) { /* sqlq.notify turned on since: the warning is stale */
        l->said_silent = false;
        SQLQ_INFO("wakeup_on", "channel=%s note=\"a notification came after all (sqlq.notify "
                  "changed since wakeup_off was logged): the route is woken by commits\"",
                  l->channel);
    }
    if (notified) {
        *event = SQLQ_PG_LISTEN_NOTIFIED;
        if (sqlq_pg_arm_hint(&l->arm) && !send(l, UNLOCK_SQL, 0))
            return false;
    }
    return true;
}

static sqlq_pg_listen_event lost(sqlq_pg_listen *l)
{
    char why[256];
    message_of(l->conn, why, sizeof(why));
    went_down(l, "listen_lost", why, true);
    return SQLQ_PG_LISTEN_DOWN;
}

/* A pending arm that has waited long is said once (through lock timeouts): writers notify
 * meanwhile, but this session reads their notifications only once it is granted. */
static void note_long_wait(sqlq_pg_listen *l, uint64_t now)
{
    uint64_t waited = sqlq_pg_arm_waited_ms(&l->arm, now);
    if (waited < ARM_WAIT_LOG_MS || l->arm.wait_logged)
        return;
    l->arm.wait_logged = true;
    SQLQ_INFO("wakeup_arm_waiting",
              "channel=%s waited_ms=%llu note=\"the wake-up lock is held by an open transaction "
              "that wrote the table, or by another bridge instance (pg_locks: advisory, classid "
              "%d): the route polls at its interval until it is granted\"",
              l->channel, (unsigned long long)waited, SQLQ_PG_WAKE_CLASS);
}

sqlq_pg_listen_event sqlq_pg_listen_wait(sqlq_pg_listen *l, uint64_t timeout_ms, int64_t covered)
{
    if (l->off) {
        sleep_ms(timeout_ms);
        return SQLQ_PG_LISTEN_TIMEOUT;
    }
    uint64_t now = sqlq_clock_mono_ms();
    if (!l->conn) {
        if (now < l->next_try_ms) {
            uint64_t left = l->next_try_ms - now;
            sleep_ms(left < timeout_ms ? left : timeout_ms);
            return SQLQ_PG_LISTEN_DOWN;
        }
        return connect_and_listen(l) ? SQLQ_PG_LISTEN_NOTIFIED : SQLQ_PG_LISTEN_DOWN;
    }
    uint64_t end = now + timeout_ms;
    for (;;) {
        sqlq_pg_listen_event ev = SQLQ_PG_LISTEN_TIMEOUT;
        if (!pump(l, covered, &ev))
            return lost(l);
        if (ev != SQLQ_PG_LISTEN_TIMEOUT)
            return ev;
        now = sqlq_clock_mono_ms();
        if (l->arm_sql && !in_flight(l) && sqlq_pg_arm_due(&l->arm, now)) {
            if (!send(l, l->arm_sql, 2))
                return lost(l);
            sqlq_pg_arm_sent(&l->arm, now);
        }
        note_long_wait(l, now);
        if (now >= end)
            return SQLQ_PG_LISTEN_TIMEOUT;
        uint64_t left = end - now;
        struct pollfd pfd = {PQsocket(l->conn), POLLIN, 0};
        int rc = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
        if (rc == 0 || (rc < 0 && errno == EINTR))
            return SQLQ_PG_LISTEN_TIMEOUT;
    }
}

sqlq_pg_listen_event sqlq_pg_listen_check(sqlq_pg_listen *l, int64_t covered)
{
    if (l->off || !l->conn)
        return l->off ? SQLQ_PG_LISTEN_TIMEOUT : SQLQ_PG_LISTEN_DOWN;
    sqlq_pg_listen_event ev = SQLQ_PG_LISTEN_TIMEOUT;
    return pump(l, covered, &ev) ? ev : lost(l);
}

void sqlq_pg_listen_peek(sqlq_pg_listen *l, int64_t covered)
{
    if (l->off || !l->conn || !l->peek_sql)
        return;
    sqlq_pg_listen_event ev = SQLQ_PG_LISTEN_TIMEOUT;
    bool ok = pump(l, covered, &ev);
    if (ok && ev != SQLQ_PG_LISTEN_TIMEOUT)
        l->kept = ev; /* a hint already: no need to peek */
    else if (ok && !in_flight(l) && l->arm.state == SQLQ_PG_ARM_OFF)
        ok = (l->peeking = send(l, l->peek_sql, 1));
    if (!ok)
        (void)lost(l); /* the next wait reconnects; its new LISTEN is a hint */
}
