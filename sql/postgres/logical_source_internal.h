/* logical_source_internal: what logical_source.c (the capture API side) and logical_reader.c
 * (the thread that reads the stream) share. Everything below mu is guarded by it. */
#ifndef SQLQ_LOGICAL_SOURCE_INTERNAL_H
#define SQLQ_LOGICAL_SOURCE_INTERNAL_H

#include "catalog.h"
#include "logical_source.h"
#include "logical_txn.h"
#include "pg_ack.h"
#include "pg_conninfo.h"

#include <pthread.h>

/* Changes received and not yet polled are held up to this many batches' worth: the reader
 * stops handing over meanwhile (a transaction waits in its compact form, logical_txn.h), and
 * its status updates go on. */
#define SQLQ_LOGICAL_READY_BATCHES 2u

typedef struct sqlq_logical_ready {
    sqlq_logical_change c;
    uint64_t version;  /* commit LSN */
    uint64_t seq;      /* pg_ack transaction */
    int attempts;
} sqlq_logical_ready;

struct sqlq_logical_source {
    sqlq_db *db;                 /* the route's connection: status */
    sqlq_table *table;
    uint32_t table_oid;          /* the table's OID (set by open, then the reader's alone) */
    sqlq_catalog_names names;
    sqlq_pg_slot_names slot;
    sqlq_pg_conninfo *ci;
    char *conn;                  /* ODBC connection string: the reader's own connection */
    int max_batch;
    size_t ready_max;            /* SQLQ_LOGICAL_READY_BATCHES * max_batch */
    int max_attempts;
    bool before_image, changed;
    bool skip_truncate;
    bool started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* ready grew, or room was made, or stop */
    bool stop;
    sqlq_pg_ack *ack;
    sqlq_logical_ready *q;       /* ring of ready changes, oldest first */
    size_t qhead, qcount, qcap;
    size_t in_flight;
    bool holder;
    bool caught_up;              /* the stream reached the server's WAL end as of its start */
    bool standby;                /* another instance holds the slot */
    bool has_fatal;
    sqlq_error fatal;            /* the slot is gone or lost: every poll says so */
    uint64_t pending_since_ms;   /* 0: everything received is confirmed */
    long long skipped, truncates;
};

/* The reader thread (logical_reader.c). */
void *sqlq_logical_reader_main(void *arg);
/* mu held: register a committed transaction of n changes with the acknowledgement rule
 * (*out_seq names it), then append its changes to the ready ring one by one (taken). */
SQLQ_NODISCARD sqlq_result sqlq_logical_ready_txn(sqlq_logical_source *ls, uint64_t end_lsn,
                                                  size_t n, uint64_t *out_seq);
SQLQ_NODISCARD sqlq_result sqlq_logical_ready_add(sqlq_logical_source *ls, sqlq_logical_change c,
                                                  uint64_t version, uint64_t seq);

#endif
