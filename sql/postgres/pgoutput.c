/* pgoutput: one message of PostgreSQL's logical replication protocol (proto_version 1) decoded.
 * Every field is big-endian; strings are NUL-terminated; nothing is trusted (a fuzz harness,
 * tests/fuzz/fuzz_pgoutput.c, feeds it arbitrary bytes). */
#include "pgoutput.h"

#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const unsigned char *p;
    size_t len, pos;
    const char *bad; /* what was wrong first: NULL while all is well */
} reader;

static bool need(reader *r, size_t n, const char *what) {
    if (r->bad)
        return false;
    if (r->len - r->pos < n) {
        r->bad = what;
        return false;
    }
    return true;
}

static uint64_t get_be(reader *r, size_t n, const char *what) {
    uint64_t v = 0;
    if (!need(r, n, what))
        return 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | r->p[r->pos + i];
    r->pos += n;
    return v;
}

static uint8_t get_u8(reader *r, const char *what) { return (uint8_t)get_be(r, 1, what); }
static uint16_t get_u16(reader *r, const char *what) { return (uint16_t)get_be(r, 2, what); }
static uint32_t get_u32(reader *r, const char *what) { return (uint32_t)get_be(r, 4, what); }
static uint64_t get_u64(reader *r, const char *what) { return get_be(r, 8, what); }

static const char *get_str(reader *r, const char *what) {
    if (!need(r, 1, what))
        return "";
    const unsigned char *start = r->p + r->pos;
    const unsigned char *nul = memchr(start, 0, r->len - r->pos);
    if (!nul) {
        r->bad = what;
        return "";
    }
    r->pos += (size_t)(nul - start) + 1;
    return (const char *)start;
}

static bool read_tuple(reader *r, sqlq_pgo_tuple *t) {
    t->ncols = get_u16(r, "tuple column count");
    if (r->bad)
        return false;
    /* Every column takes at least one byte: a count the rest cannot hold is malformed (and
     * would otherwise allocate for nothing). */
    if (t->ncols > r->len - r->pos) {
        r->bad = "tuple column count beyond the message";
        return false;
    }
    t->cols = t->ncols ? calloc(t->ncols, sizeof *t->cols) : NULL;
    if (t->ncols && !t->cols) {
        r->bad = "out of memory";
        return false;
    }
    for (uint16_t i = 0; i < t->ncols && !r->bad; i++) {
        sqlq_pgo_value *v = &t->cols[i];
        v->kind = (char)get_u8(r, "column kind");
        if (v->kind == 'n' || v->kind == 'u' || r->bad)
            continue;
        if (v->kind != 't' && v->kind != 'b') {
            r->bad = "column kind not one of n, u, t, b";
            break;
        }
        uint32_t n = get_u32(r, "column length");
        if (!need(r, n, "column value beyond the message"))
            break;
        v->data = (const char *)r->p + r->pos;
        v->len = n;
        r->pos += n;
    }
    return !r->bad;
}

static void read_relation(reader *r, sqlq_pgo_msg *m) {
    m->u.relation.relid = get_u32(r, "relation id");
    m->u.relation.nspname = get_str(r, "relation namespace");
    m->u.relation.relname = get_str(r, "relation name");
    m->u.relation.replident = (char)get_u8(r, "replica identity");
    uint16_t n = get_u16(r, "relation column count");
    if (r->bad)
        return;
    if ((size_t)n * 10 > r->len - r->pos) { /* flags, "", oid, typmod: 10 bytes at least */
        r->bad = "relation column count beyond the message";
        return;
    }
    m->u.relation.cols = n ? calloc(n, sizeof *m->u.relation.cols) : NULL;
    if (n && !m->u.relation.cols) {
        r->bad = "out of memory";
        return;
    }
    m->u.relation.ncols = n;
    for (uint16_t i = 0; i < n && !r->bad; i++) {
        sqlq_pgo_column *c = &m->u.relation.cols[i];
        c->flags = get_u8(r, "column flags");
        c->name = get_str(r, "column name");
        c->type_oid = get_u32(r, "column type");
        c->typmod = (int32_t)get_u32(r, "column type modifier");
    }
}

static void read_change(reader *r, sqlq_pgo_msg *m) {
    m->u.change.relid = get_u32(r, "relation id");
    char action = (char)get_u8(r, "tuple marker");
    if (r->bad)
        return;
    if (action == 'K' || action == 'O') {
        if (m->kind == SQLQ_PGO_INSERT) {
            r->bad = "an insert with an old tuple";
            return;
        }
        m->u.change.old_kind = action;
        if (!read_tuple(r, &m->u.change.old_tuple))
            return;
        if (m->kind == SQLQ_PGO_DELETE)
            return;
        action = (char)get_u8(r, "new tuple marker");
    } else if (m->kind == SQLQ_PGO_DELETE) {
        r->bad = "a delete without 'K' or 'O'";
        return;
    }
    if (r->bad)
        return;
    if (action != 'N') {
        r->bad = "expected the new tuple marker 'N'";
        return;
    }
    read_tuple(r, &m->u.change.new_tuple);
}

static void read_truncate(reader *r, sqlq_pgo_msg *m) {
    uint32_t n = get_u32(r, "truncate relation count");
    m->u.truncate.flags = get_u8(r, "truncate flags");
    if (r->bad)
        return;
    if ((uint64_t)n * 4 > r->len - r->pos) {
        r->bad = "truncate relation count beyond the message";
        return;
    }
    m->u.truncate.relids = n ? calloc(n, sizeof *m->u.truncate.relids) : NULL;
    if (n && !m->u.truncate.relids) {
        r->bad = "out of memory";
        return;
    }
    m->u.truncate.nrelids = n;
    for (uint32_t i = 0; i < n; i++)
        m->u.truncate.relids[i] = get_u32(r, "truncate relation id");
}

static void read_message(reader *r, sqlq_pgo_msg *m) {
    m->u.message.flags = get_u8(r, "message flags");
    m->u.message.lsn = get_u64(r, "message lsn");
    m->u.message.prefix = get_str(r, "message prefix");
    uint32_t n = get_u32(r, "message length");
    if (!need(r, n, "message content beyond the message"))
        return;
    m->u.message.content = (const char *)r->p + r->pos;
    m->u.message.len = n;
    r->pos += n;
}

static void read_body(reader *r, sqlq_pgo_msg *m) {
    switch (m->kind) {
    case SQLQ_PGO_BEGIN:
        m->u.begin.final_lsn = get_u64(r, "begin final lsn");
        m->u.begin.commit_time = (int64_t)get_u64(r, "begin commit time");
        m->u.begin.xid = get_u32(r, "begin xid");
        break;
    case SQLQ_PGO_COMMIT:
        m->u.commit.flags = get_u8(r, "commit flags");
        m->u.commit.commit_lsn = get_u64(r, "commit lsn");
        m->u.commit.end_lsn = get_u64(r, "commit end lsn");
        m->u.commit.commit_time = (int64_t)get_u64(r, "commit time");
        break;
    case SQLQ_PGO_ORIGIN:
        m->u.origin.lsn = get_u64(r, "origin lsn");
        m->u.origin.name = get_str(r, "origin name");
        break;
    case SQLQ_PGO_TYPE:
        m->u.type.oid = get_u32(r, "type oid");
        m->u.type.nspname = get_str(r, "type namespace");
        m->u.type.typname = get_str(r, "type name");
        break;
    case SQLQ_PGO_RELATION: read_relation(r, m); break;
    case SQLQ_PGO_INSERT:
    case SQLQ_PGO_UPDATE:
    case SQLQ_PGO_DELETE: read_change(r, m); break;
    case SQLQ_PGO_TRUNCATE: read_truncate(r, m); break;
    case SQLQ_PGO_MESSAGE: read_message(r, m); break;
    case SQLQ_PGO_UNKNOWN: break;
    }
}

static sqlq_pgo_kind kind_of(uint8_t tag) {
    switch (tag) {
    case 'B': case 'C': case 'O': case 'R': case 'Y': case 'I': case 'U': case 'D': case 'T':
    case 'M':
        return (sqlq_pgo_kind)tag;
    default:
        return SQLQ_PGO_UNKNOWN;
    }
}

sqlq_result sqlq_pgoutput_decode(const char *data, size_t len, sqlq_pgo_msg *out,
                                 sqlq_error *err) {
    memset(out, 0, sizeof *out);
    if (!data || len == 0)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "pgoutput: empty message");
    reader r = {(const unsigned char *)data, len, 1, NULL};
    out->tag = r.p[0];
    out->kind = kind_of(out->tag);
    read_body(&r, out);
    if (!r.bad && out->kind != SQLQ_PGO_UNKNOWN && r.pos != r.len)
        r.bad = "bytes left after the message";
    if (!r.bad)
        return SQLQ_OK;
    sqlq_result code = strcmp(r.bad, "out of memory") == 0 ? SQLQ_E_NOMEM : SQLQ_E_PARSE;
    sqlq_error_set(err, code, false, "pgoutput: %s message (%zu bytes): %s at byte %zu",
                   sqlq_pgoutput_kind_name(out->kind), len, r.bad, r.pos);
    sqlq_pgoutput_free(out);
    return code;
}

void sqlq_pgoutput_free(sqlq_pgo_msg *m) {
    if (!m)
        return;
    switch (m->kind) {
    case SQLQ_PGO_RELATION: free(m->u.relation.cols); break;
    case SQLQ_PGO_INSERT:
    case SQLQ_PGO_UPDATE:
    case SQLQ_PGO_DELETE:
        free(m->u.change.old_tuple.cols);
        free(m->u.change.new_tuple.cols);
        break;
    case SQLQ_PGO_TRUNCATE: free(m->u.truncate.relids); break;
    default: break;
    }
    memset(m, 0, sizeof *m);
}

const char *sqlq_pgoutput_kind_name(sqlq_pgo_kind k) {
    switch (k) {
    case SQLQ_PGO_BEGIN: return "begin";
    case SQLQ_PGO_COMMIT: return "commit";
    case SQLQ_PGO_ORIGIN: return "origin";
    case SQLQ_PGO_RELATION: return "relation";
    case SQLQ_PGO_TYPE: return "type";
    case SQLQ_PGO_INSERT: return "insert";
    case SQLQ_PGO_UPDATE: return "update";
    case SQLQ_PGO_DELETE: return "delete";
    case SQLQ_PGO_TRUNCATE: return "truncate";
    case SQLQ_PGO_MESSAGE: return "message";
    case SQLQ_PGO_UNKNOWN: break;
    }
    return "unknown";
}
