/* pgoutput: one message of PostgreSQL's logical replication protocol (proto_version 1) decoded. */
#ifndef SQLQ_PGOUTPUT_H
#define SQLQ_PGOUTPUT_H

#include "result.h"

#include <stddef.h>
#include <stdint.h>

/* The message's first byte. Anything else decodes as SQLQ_PGO_UNKNOWN (the caller skips it). */
typedef enum {
    SQLQ_PGO_UNKNOWN = 0,
    SQLQ_PGO_BEGIN = 'B',
    SQLQ_PGO_COMMIT = 'C',
    SQLQ_PGO_ORIGIN = 'O',
    SQLQ_PGO_RELATION = 'R',
    SQLQ_PGO_TYPE = 'Y',
    SQLQ_PGO_INSERT = 'I',
    SQLQ_PGO_UPDATE = 'U',
    SQLQ_PGO_DELETE = 'D',
    SQLQ_PGO_TRUNCATE = 'T',
    SQLQ_PGO_MESSAGE = 'M'
} sqlq_pgo_kind;

/* One column of a tuple: kind 'n' null, 'u' an unchanged TOASTed value (no data), 't' text,
 * 'b' binary. data/len point into the decoded input (not NUL-terminated). */
typedef struct sqlq_pgo_value {
    char kind;
    const char *data;
    size_t len;
} sqlq_pgo_value;

typedef struct sqlq_pgo_tuple {
    uint16_t ncols;
    sqlq_pgo_value *cols; /* owned by the message */
} sqlq_pgo_tuple;

typedef struct sqlq_pgo_column {
    uint8_t flags; /* 1: part of the replica identity (every column under FULL) */
    const char *name;
    uint32_t type_oid;
    int32_t typmod;
} sqlq_pgo_column;

#define SQLQ_PGO_TRUNCATE_CASCADE 1u
#define SQLQ_PGO_TRUNCATE_RESTART_SEQS 2u
#define SQLQ_PGO_MESSAGE_TRANSACTIONAL 1u

/* A decoded message. Strings and values point into the input buffer, which must outlive it;
 * the arrays are owned by it: sqlq_pgoutput_free. */
typedef struct sqlq_pgo_msg {
    sqlq_pgo_kind kind;
    uint8_t tag; /* the first byte as received (also for SQLQ_PGO_UNKNOWN) */
    union {
        struct { uint64_t final_lsn; int64_t commit_time; uint32_t xid; } begin;
        struct { uint8_t flags; uint64_t commit_lsn, end_lsn; int64_t commit_time; } commit;
        struct { uint64_t lsn; const char *name; } origin;
        struct {
            uint32_t relid;
            const char *nspname; /* "" for pg_catalog */
            const char *relname;
            char replident;      /* 'd' default, 'n' nothing, 'f' full, 'i' index */
            uint16_t ncols;
            sqlq_pgo_column *cols;
        } relation;
        struct { uint32_t oid; const char *nspname, *typname; } type;
        struct {
            uint32_t relid;
            char old_kind; /* 0: no old tuple, 'K' the old key, 'O' the whole old row (FULL) */
            sqlq_pgo_tuple old_tuple;
            sqlq_pgo_tuple new_tuple; /* ncols 0 for a delete */
        } change; /* insert, update, delete */
        struct { uint32_t nrelids; uint8_t flags; uint32_t *relids; } truncate;
        struct {
            uint8_t flags;
            uint64_t lsn;
            const char *prefix;
            const char *content;
            size_t len;
        } message;
    } u;
} sqlq_pgo_msg;

/* Decode one message (the bytes after the 'w' XLogData header). A short, malformed or
 * inconsistent message is SQLQ_E_PARSE with what was wrong in err (nothing is kept); an
 * unknown first byte is SQLQ_OK with kind SQLQ_PGO_UNKNOWN. */
SQLQ_NODISCARD sqlq_result sqlq_pgoutput_decode(const char *data, size_t len, sqlq_pgo_msg *out,
                                                sqlq_error *err);
void sqlq_pgoutput_free(sqlq_pgo_msg *m);
/* "begin", "insert", …, "unknown": for log lines. */
const char *sqlq_pgoutput_kind_name(sqlq_pgo_kind k);

#endif
