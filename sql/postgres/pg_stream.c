/* pg_stream: one logical replication stream (START_REPLICATION … LOGICAL, pgoutput) over libpq.
 * The loop follows the streaming replication protocol: CopyBoth after START_REPLICATION, the
 * server's XLogData ('w') and primary keepalive ('k') messages, the client's standby status
 * update ('r'), every integer big-endian, times in microseconds since 2000-01-01. */
#include "pg_stream.h"

#include "clock.h"
#include "log.h"

#include <libpq-fe.h>

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PG_EPOCH_UNIX_S 946684800LL /* 2000-01-01T00:00:00Z */
#define XLOGDATA_HEADER 25          /* 'w', dataStart, walEnd, sendTime */
#define KEEPALIVE_LEN 18            /* 'k', walEnd, sendTime, replyRequested */

struct sqlq_pg_stream {
    PGconn *conn;
    char *copybuf;        /* the last message PQgetCopyData returned (freed at the next call) */
    uint64_t last_status_ms;
    uint64_t sent_flush;
    bool flush_pending;   /* a status update not yet all written to the socket */
};

static int64_t pg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((int64_t)ts.tv_sec - PG_EPOCH_UNIX_S) * 1000000LL + ts.tv_nsec / 1000;
}

static uint64_t get64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return v;
}

static void put64(char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (char)(v & 0xff);
        v >>= 8;
    }
}

void sqlq_pg_lsn_format(uint64_t lsn, char *out, size_t size)
{
    snprintf(out, size, "%" PRIX32 "/%" PRIX32, (uint32_t)(lsn >> 32), (uint32_t)lsn);
}

bool sqlq_pg_lsn_parse(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (!s || !*s)
        return false;
    unsigned long long hi = strtoull(s, &end, 16);
    if (end == s || *end != '/' || hi > UINT32_MAX)
        return false;
    const char *lo_s = end + 1;
    unsigned long long lo = strtoull(lo_s, &end, 16);
    if (end == lo_s || *end != '\0' || lo > UINT32_MAX)
        return false;
    *out = ((uint64_t)hi << 32) | (uint64_t)lo;
    return true;
}

/* The server's error: message and SQLSTATE into err; the result code from the SQLSTATE. */
static sqlq_result server_error(PGconn *c, const PGresult *res, const char *what, sqlq_error *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    if (!msg || !*msg)
        msg = c ? PQerrorMessage(c) : "out of memory";
    char line[400];
    snprintf(line, sizeof line, "%s", msg);
    line[strcspn(line, "\n")] = '\0';
    sqlq_result code = SQLQ_E_SQL;
    bool transient = false;
    if (!state || !c || PQstatus(c) != CONNECTION_OK || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0 || strcmp(state, "53300") == 0) {
        code = SQLQ_E_NETWORK;
        transient = true;
    } else if (strcmp(state, "42704") == 0) {
        code = SQLQ_E_NOT_FOUND; /* the slot does not exist */
    } else if (strcmp(state, "55006") == 0) {
        code = SQLQ_E_CONFLICT; /* the slot is active in another session */
        transient = true;
    }
    sqlq_error_set(err, code, transient, "%s: %s", what, line);
    if (err && state && err->code == code)
        snprintf(err->sqlstate, sizeof err->sqlstate, "%s", state);
    return code;
}

static sqlq_result start(sqlq_pg_stream *s, const char *slot, const char *publication,
                         bool messages, uint64_t start_lsn, sqlq_error *err)
{
    char *slot_id = PQescapeIdentifier(s->conn, slot, strlen(slot));
    char *pub_lit = PQescapeLiteral(s->conn, publication, strlen(publication));
    char lsn[32], sql[512];
    sqlq_pg_lsn_format(start_lsn, lsn, sizeof lsn);
    if (!slot_id || !pub_lit) {
        PQfreemem(slot_id);
        PQfreemem(pub_lit);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    /* publication_names is a list of names in one string: the name is quoted inside it. */
    int n = snprintf(sql, sizeof sql,
                     "START_REPLICATION SLOT %s LOGICAL %s (proto_version '1', "
                     "publication_names %s%s)", slot_id, lsn, pub_lit,
                     messages ? ", messages 'true'" : "");
    PQfreemem(slot_id);
    PQfreemem(pub_lit);
    if (n < 0 || (size_t)n >= sizeof sql)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "slot or publication name too long");
    PGresult *res = PQexec(s->conn, sql);
    sqlq_result rc = SQLQ_OK;
    if (PQresultStatus(res) != PGRES_COPY_BOTH)
        rc = server_error(s->conn, res, "START_REPLICATION", err);
    PQclear(res);
    return rc;
}

sqlq_result sqlq_pg_stream_open(const sqlq_pg_conninfo *ci, const char *options,
                                const char *slot, const char *publication, bool messages,
                                uint64_t start_lsn, sqlq_pg_stream **out, sqlq_error *err)
{
    *out = NULL;
    const char *extra[][2] = {{"options", options ? options : ""},
        {"replication", "database"}, {"application_name", "sqlq-logical"},
        {"connect_timeout", "10"},   {"keepalives", "1"},
        {"keepalives_idle", "30"},   {"keepalives_interval", "10"}, {"keepalives_count", "3"}};
    const size_t nextra = sizeof extra / sizeof extra[0];
    const char *keys[SQLQ_PG_CONNINFO_MAX + 9], *vals[SQLQ_PG_CONNINFO_MAX + 9];
    sqlq_pg_conninfo_params(ci, (const char *const (*)[2])extra, nextra, keys, vals,
                            SQLQ_PG_CONNINFO_MAX + 9);
    sqlq_pg_stream *s = calloc(1, sizeof *s);
    if (!s)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    s->conn = PQconnectdbParams(keys, vals, 0);
    sqlq_result rc = SQLQ_OK;
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK)
        rc = server_error(s->conn, NULL, "replication connection", err);
    if (rc == SQLQ_OK)
        rc = start(s, slot, publication, messages, start_lsn, err);
    if (rc == SQLQ_OK && PQsetnonblocking(s->conn, 1) != 0)
        rc = server_error(s->conn, NULL, "replication connection", err);
    if (rc != SQLQ_OK) {
        sqlq_pg_stream_close(s);
        return rc;
    }
    s->last_status_ms = sqlq_clock_mono_ms();
    *out = s;
    return SQLQ_OK;
}

void sqlq_pg_stream_close(sqlq_pg_stream *s)
{
    if (!s)
        return;
    PQfreemem(s->copybuf);
    if (s->conn)
        PQfinish(s->conn);
    free(s);
}

static sqlq_result lost(sqlq_pg_stream *s, const char *what, sqlq_error *err)
{
    PGresult *res = PQgetResult(s->conn);
    const char *msg = res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                          : PQerrorMessage(s->conn);
    char line[400];
    snprintf(line, sizeof line, "%s", msg && *msg ? msg : "the server ended the stream");
    line[strcspn(line, "\n")] = '\0';
    PQclear(res);
    return sqlq_error_set(err, SQLQ_E_NETWORK, true, "replication stream %s: %s", what, line);
}

sqlq_result sqlq_pg_stream_status(sqlq_pg_stream *s, uint64_t flushed, bool force,
                                  sqlq_error *err)
{
    uint64_t now = sqlq_clock_mono_ms();
    if (s->flush_pending) {
        int f = PQflush(s->conn);
        if (f < 0)
            return lost(s, "status", err);
        s->flush_pending = f == 1;
    }
    if (!force && now - s->last_status_ms < SQLQ_PG_STREAM_STATUS_MS && flushed == s->sent_flush)
        return SQLQ_OK;
    if (!force && now - s->last_status_ms < 1000u) /* a new position: at most once a second */
        return SQLQ_OK;
    char msg[34];
    msg[0] = 'r';
    put64(msg + 1, flushed);  /* written */
    put64(msg + 9, flushed);  /* flushed: what the slot may forget */
    put64(msg + 17, flushed); /* applied */
    put64(msg + 25, (uint64_t)pg_now_us());
    msg[33] = 0; /* no reply requested */
    if (PQputCopyData(s->conn, msg, (int)sizeof msg) <= 0)
        return lost(s, "status", err);
    int f = PQflush(s->conn);
    if (f < 0)
        return lost(s, "status", err);
    s->flush_pending = f == 1;
    s->last_status_ms = now;
    s->sent_flush = flushed;
    return SQLQ_OK;
}

static bool wait_readable(PGconn *c, uint64_t timeout_ms)
{
    struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
    return poll(&p, 1, (int)(timeout_ms > 1000 ? 1000 : timeout_ms)) > 0;
}

/* One message from the copy stream, or none within timeout_ms (*got false). */
static sqlq_result read_copy(sqlq_pg_stream *s, uint64_t flushed, uint64_t timeout_ms, int *out_len,
                             sqlq_error *err)
{
    uint64_t deadline = sqlq_clock_mono_ms() + timeout_ms;
    for (;;) {
        PQfreemem(s->copybuf);
        s->copybuf = NULL;
        int n = PQgetCopyData(s->conn, &s->copybuf, 1);
        if (n > 0) {
            *out_len = n;
            return SQLQ_OK;
        }
        if (n == -1)
            return lost(s, "ended", err);
        if (n < -1)
            return lost(s, "read", err);
        sqlq_result rc = sqlq_pg_stream_status(s, flushed, false, err);
        if (rc != SQLQ_OK)
            return rc;
        uint64_t now = sqlq_clock_mono_ms();
        if (now >= deadline) {
            *out_len = 0;
            return SQLQ_OK;
        }
        if (wait_readable(s->conn, deadline - now) && PQconsumeInput(s->conn) == 0)
            return lost(s, "read", err);
    }
}

sqlq_result sqlq_pg_stream_next(sqlq_pg_stream *s, uint64_t flushed, uint64_t timeout_ms,
                                sqlq_pg_stream_msg *out, sqlq_error *err)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    sqlq_result rc = read_copy(s, flushed, timeout_ms, &n, err);
    if (rc != SQLQ_OK || n == 0)
        return rc;
    const char *b = s->copybuf;
    if (b[0] == 'k' && n >= KEEPALIVE_LEN) {
        out->event = SQLQ_PG_STREAM_KEEPALIVE;
        out->wal_end = get64(b + 1);
        if (b[17])
            return sqlq_pg_stream_status(s, flushed, true, err);
        return SQLQ_OK;
    }
    if (b[0] == 'w' && n >= XLOGDATA_HEADER) {
        out->event = SQLQ_PG_STREAM_DATA;
        out->lsn = get64(b + 1);
        out->data = b + XLOGDATA_HEADER;
        out->len = (size_t)n - XLOGDATA_HEADER;
        return SQLQ_OK;
    }
    return sqlq_error_set(err, SQLQ_E_PARSE, false,
                          "replication stream: unexpected message '%c' of %d bytes",
                          b[0] >= 32 && b[0] < 127 ? b[0] : '?', n);
}

uint64_t sqlq_pg_stream_sent_flush(const sqlq_pg_stream *s) { return s ? s->sent_flush : 0; }

int sqlq_pg_stream_backend_pid(const sqlq_pg_stream *s)
{
    return s && s->conn ? PQbackendPID(s->conn) : 0;
}
