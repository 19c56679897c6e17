/* pg_stream: one logical replication stream (START_REPLICATION … LOGICAL, pgoutput) over libpq. */
#ifndef SQLQ_PG_STREAM_H
#define SQLQ_PG_STREAM_H

#include "pg_conninfo.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_pg_stream sqlq_pg_stream;

/* Status updates go out at least this often (pg_recvlogical's default; wal_sender_timeout is
 * 60 s by default, and any message from the client resets it). */
#define SQLQ_PG_STREAM_STATUS_MS 10000u

/* Connect (replication=database) and START_REPLICATION SLOT slot LOGICAL start_lsn with
 * proto_version '1' and publication_names publication. The server resumes at the greater of
 * start_lsn and the slot's confirmed_flush_lsn. A slot that does not exist or is active in
 * another session is SQLQ_E_NOT_FOUND / SQLQ_E_CONFLICT (the server's message in err); an
 * unreachable server is transient. */
/* options: the connection's `options` (pg_text.h: the settings the output functions' text
 * depends on), or NULL. messages: ask pgoutput for logical messages too (PostgreSQL 14+). */
SQLQ_NODISCARD sqlq_result sqlq_pg_stream_open(const sqlq_pg_conninfo *ci, const char *options,
                                               const char *slot, const char *publication,
                                               bool messages, uint64_t start_lsn,
                                               sqlq_pg_stream **out, sqlq_error *err);
void sqlq_pg_stream_close(sqlq_pg_stream *s);

typedef enum {
    SQLQ_PG_STREAM_NONE = 0,  /* nothing within the wait */
    SQLQ_PG_STREAM_DATA,      /* one pgoutput message: data/len, lsn (the record's position) */
    SQLQ_PG_STREAM_KEEPALIVE, /* the server's WAL end in wal_end (answered already if asked) */
} sqlq_pg_stream_event;

typedef struct sqlq_pg_stream_msg {
    sqlq_pg_stream_event event;
    uint64_t lsn;     /* DATA: the XLogData start */
    uint64_t wal_end; /* KEEPALIVE: the server's WAL end */
    const char *data; /* DATA: valid until the next call on the stream */
    size_t len;
} sqlq_pg_stream_msg;

/* Wait up to timeout_ms for the next message. flushed: what may be reported as flushed now
 * (pg_ack.h): a keepalive that asks for a reply is answered at once with it, and a status
 * update goes out whenever SQLQ_PG_STREAM_STATUS_MS passed since the last. A lost connection
 * or the server ending the stream is SQLQ_E_NETWORK, transient (open again). */
SQLQ_NODISCARD sqlq_result sqlq_pg_stream_next(sqlq_pg_stream *s, uint64_t flushed,
                                               uint64_t timeout_ms, sqlq_pg_stream_msg *out,
                                               sqlq_error *err);
/* Send a status update now when force, or when one is due; never waits for the server. */
SQLQ_NODISCARD sqlq_result sqlq_pg_stream_status(sqlq_pg_stream *s, uint64_t flushed, bool force,
                                                 sqlq_error *err);
/* The flushed position last sent (0 before the first status). */
uint64_t sqlq_pg_stream_sent_flush(const sqlq_pg_stream *s);
/* The walsender's process id, for tests and logs. */
int sqlq_pg_stream_backend_pid(const sqlq_pg_stream *s);

/* "16/B374D848" for an LSN (out of at least 24 bytes); and back: false when malformed. */
void sqlq_pg_lsn_format(uint64_t lsn, char *out, size_t size);
bool sqlq_pg_lsn_parse(const char *s, uint64_t *out);

#endif
