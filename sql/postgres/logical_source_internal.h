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

/* Transactions received and not yet polled are held up to this many changes (a larger
 * transaction is held whole): the reader stops reading meanwhile, status updates go on. */
#define SQLQ_LOGICAL_READY_MAX 20000u

typedef struct sqlq_logical_ready {
    sqlq_logical_change c;
    uint64_t version;  /* commit LSN */
    uint64_t seq;      /* pg_ack transaction */
    int attempts;
} sqlq_logical_ready;

struct sqlq_logical_source {
    sqlq_db *db;                 /* the route's connection: status */
    sqlq_table *table;
    sqlq_catalog_names names;
    sqlq_pg_slot_names slot;
    sqlq_pg_conninfo *ci;
    char *conn;                  /* ODBC connection string: the reader's own connection */
    int max_batch;
    int max_attempts;
    bool before_image, changed;
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
/* Append a committed transaction's changes to the ready ring (mu held). */
SQLQ_NODISCARD sqlq_result sqlq_logical_ready_push(sqlq_logical_source *ls, sqlq_logical_txn *t,
                                                   uint64_t end_lsn);
uint64_t sqlq_logical_mono_ms(void);

#endif
