/* pgoutput_peek: see pgoutput_peek.h. The wire format is PostgreSQL's "Logical Streaming
 * Replication Protocol" (XLogData 'w' around pgoutput's Begin, Relation, Insert, Commit …). */
#include "pgoutput_peek.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>
#include <time.h>

struct pgoutput_peek {
    PGconn *conn;
    char slot[64];
};

pgoutput_peek *pgoutput_peek_open(const char *port, const char *dbname, const char *options)
{
    const char *keys[] = {"host", "port", "dbname", "user", "replication", "options", NULL};
    const char *values[] = {"127.0.0.1", port, dbname, "sqlq", "database", options, NULL};
    if (!options)
        keys[5] = NULL;
    pgoutput_peek *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->conn = PQconnectdbParams(keys, values, 0);
    if (PQstatus(p->conn) != CONNECTION_OK)
        fail_msg("replication connection: %s", PQerrorMessage(p->conn));
    static int counter;
    snprintf(p->slot, sizeof(p->slot), "pgtext_%d_%d", (int)getpid(), ++counter);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "CREATE_REPLICATION_SLOT %s TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT", p->slot);
    PGresult *res = PQexec(p->conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(p->conn));
    PQclear(res);
    return p;
}

void pgoutput_peek_close(pgoutput_peek *p)
{
    if (!p)
        return;
    PQfinish(p->conn); /* the temporary slot goes with the session */
    free(p);
}

/* A bounds-checked reader of one message, big-endian as the protocol writes integers. */
typedef struct cursor {
    const unsigned char *p;
    size_t left;
} cursor;

static const unsigned char *take(cursor *c, size_t n)
{
    if (c->left < n)
        fail_msg("pgoutput message cut short (%zu bytes wanted, %zu left)", n, c->left);
    const unsigned char *at = c->p;
    c->p += n;
    c->left -= n;
    return at;
}

static uint64_t take_uint(cursor *c, size_t n)
{
    const unsigned char *b = take(c, n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | b[i];
    return v;
}

static const char *take_cstring(cursor *c)
{
    const char *s = (const char *)c->p;
    size_t n = strnlen(s, c->left);
    take(c, n + 1);
    return s;
}

/* Relation: relid, namespace, name, replica identity, columns (flags, name, type, typmod). */
static void on_relation(cursor *c, json_t *relations)
{
    char relid[16];
    snprintf(relid, sizeof(relid), "%u", (unsigned)take_uint(c, 4));
    const char *ns = take_cstring(c);
    const char *name = take_cstring(c);
    take_uint(c, 1);
    size_t natts = (size_t)take_uint(c, 2);
    json_t *cols = json_array();
    for (size_t i = 0; i < natts; i++) {
        take_uint(c, 1);
        const char *col = take_cstring(c);
        uint32_t oid = (uint32_t)take_uint(c, 4);
        int32_t typmod = (int32_t)(uint32_t)take_uint(c, 4);
        json_array_append_new(cols, json_pack("{s:s, s:I, s:I}", "name", col, "oid",
                                              (json_int_t)oid, "typmod", (json_int_t)typmod));
    }
    json_object_set_new(relations, relid,
                        json_pack("{s:s++, s:o}", "table", ns, ".", name, "columns", cols));
}

/* Insert: relid, 'N', the tuple (number of columns, then 'n' | 'u' | 't' + length + text). */
static json_t *on_insert(cursor *c, json_t *relations)
{
    char relid[16];
    snprintf(relid, sizeof(relid), "%u", (unsigned)take_uint(c, 4));
    json_t *rel = json_object_get(relations, relid);
    if (!rel || take_uint(c, 1) != 'N')
        fail_msg("Insert of relation %s without its Relation message", relid);
    json_t *defs = json_object_get(rel, "columns");
    size_t ncols = (size_t)take_uint(c, 2);
    assert_int_equal(ncols, json_array_size(defs));
    json_t *cols = json_array();
    for (size_t i = 0; i < ncols; i++) {
        json_t *col = json_deep_copy(json_array_get(defs, i));
        char kind = (char)take_uint(c, 1);
        json_object_set_new(col, "kind", json_stringn(&kind, 1));
        json_t *text = json_null();
        if (kind == 't') {
            size_t len = (size_t)take_uint(c, 4);
            text = json_stringn((const char *)take(c, len), len);
            if (!text)
                fail_msg("column %zu: text that is not UTF-8", i);
        } else if (kind != 'n' && kind != 'u') {
            fail_msg("column %zu: tuple data kind '%c'", i, kind);
        }
        json_object_set_new(col, "text", text);
        json_array_append_new(cols, col);
    }
    return json_pack("{s:O, s:o}", "table", json_object_get(rel, "table"), "columns", cols);
}

/* One CopyData of the stream; true after the commit that follows the nth Insert. */
static bool on_copy_data(pgoutput_peek *p, const char *buf, int len, json_t *relations,
                         json_t *inserts, size_t n)
{
    cursor c = {(const unsigned char *)buf, (size_t)len};
    char type = (char)take_uint(&c, 1);
    if (type == 'k') { /* keepalive: walend, time, reply requested */
        uint64_t walend = take_uint(&c, 8);
        take_uint(&c, 8);
        if (take_uint(&c, 1)) {
            unsigned char reply[34] = {'r'};
            for (int i = 0; i < 8; i++)
                reply[1 + i] = reply[9 + i] = (unsigned char)(walend >> (56 - 8 * i));
            if (PQputCopyData(p->conn, (const char *)reply, (int)sizeof(reply)) != 1 ||
                PQflush(p->conn) != 0)
                fail_msg("standby status update: %s", PQerrorMessage(p->conn));
        }
        return false;
    }
    if (type != 'w')
        return false;
    take(&c, 24); /* start, end, send time */
    char msg = (char)take_uint(&c, 1);
    if (msg == 'R')
        on_relation(&c, relations);
    else if (msg == 'I')
        json_array_append_new(inserts, on_insert(&c, relations));
    return msg == 'C' && json_array_size(inserts) >= n;
}

static void wait_readable(PGconn *conn, time_t deadline)
{
    if (time(NULL) > deadline)
        fail_msg("pgoutput: no more changes within the time given");
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(PQsocket(conn), &fds);
    struct timeval tv = {1, 0};
    if (select(PQsocket(conn) + 1, &fds, NULL, NULL, &tv) < 0 || !PQconsumeInput(conn))
        fail_msg("pgoutput: %s", PQerrorMessage(conn));
}

json_t *pgoutput_peek_inserts(pgoutput_peek *p, const char *publication, size_t n, int timeout_s)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "START_REPLICATION SLOT %s LOGICAL 0/0 (proto_version '1', publication_names '%s')",
             p->slot, publication);
    PGresult *res = PQexec(p->conn, sql);
    if (PQresultStatus(res) != PGRES_COPY_BOTH)
        fail_msg("%s: %s", sql, PQerrorMessage(p->conn));
    PQclear(res);
    json_t *relations = json_object(), *inserts = json_array();
    time_t deadline = time(NULL) + timeout_s;
    for (bool done = false; !done;) {
        char *buf = NULL;
        int len = PQgetCopyData(p->conn, &buf, 1);
        if (len == 0) {
            wait_readable(p->conn, deadline);
            continue;
        }
        if (len < 0)
            fail_msg("pgoutput stream ended: %s", PQerrorMessage(p->conn));
        done = on_copy_data(p, buf, len, relations, inserts, n);
        PQfreemem(buf);
    }
    json_decref(relations);
    return inserts;
}
