/* capture_support: what the capture suites share: the database under test ($SQLQ_TEST_DATABASE)
 * with the statements that differ between databases, a fresh database of its kind, and the
 * capture calls, failing the test on an error. */
#ifndef SQLQ_CAPTURE_SUPPORT_H
#define SQLQ_CAPTURE_SUPPORT_H

#include "capture.h"
#include "catalog.h"
#include "db.h"
#include "testenv.h"

#include <stdbool.h>
#include <stddef.h>

/* A database the capture suites run on, and what differs there. */
typedef struct capture_env capture_env;

typedef struct capture_db {
    const char *name;
    const char *key_text;    /* a text type a primary key may hold */
    const char *bulk_1000;   /* INSERT INTO bulk (id, v): 1..1000, v = id */
    const char *one_version; /* INSERT INTO one_version (region, id, v): i in 0..999 as
                              * ('r' || i / 100, i % 100 + 1, i), in one statement */
    const char *upsert_tail; /* after INSERT INTO cc VALUES (...): replace v on a duplicate id */
    const char *sqlq_prefix; /* sqlq's tables: prefix + bare name */
    /* sqlq's objects of table n left in the database (log, leases, triggers; PostgreSQL: its
     * schema too) */
    long long (*objects)(const capture_env *e, const sqlq_catalog_names *n);
    bool backticks;          /* identifiers are quoted `so`, not "so" */
    bool ordered_versions;   /* autocommitted writes take increasing versions (MariaDB: the
                              * changes one poll stamps share its version) */
    /* NULL when a transaction can commit after a later one; else why it cannot */
    const char *no_late_commit;
    /* a later version is not read while an earlier writer of the log is open (the version
     * sequence and the horizon); false: later commits are read at once and the late one comes
     * after them with a larger version (stamped at commit) */
    bool open_writer_holds_back;
} capture_db;

struct capture_env {
    const capture_db *d;
    char *conn;
    sqlq_db *db;
};

/* The database under test (exits 1 naming the variable when there is none). */
const capture_db *capture_db_under_test(void);
/* A fresh database of the kind under test, connected. */
void capture_env_open(capture_env *e, const char *prefix);
void capture_env_close(capture_env *e);
sqlq_db *capture_connect(const char *conn);
/* sql written with standard quoted identifiers ("x") as the database quotes them (malloc'd),
 * and the same executed. */
char *capture_quoted(const capture_env *e, const char *sql);
void capture_exec_quoted(const capture_env *e, const char *sql);
/* The count in the first column of SELECT count(*) FROM <sqlq's table bare> [where]. */
long long capture_count_sqlq(const capture_env *e, const char *bare, const char *where);

sqlq_capture *capture_open(sqlq_db *db, const char *table, const char *instance, int lease_s,
                           int batch);
/* One poll, taking whatever is there (for checks that nothing is). */
void capture_poll_now(sqlq_capture *cap, sqlq_change_batch *b);
/* A poll that expects changes (waits up to 5 s for them: a concurrent writer of the same log
 * holds later versions back until it ends). */
void capture_poll(sqlq_capture *cap, sqlq_change_batch *b);
size_t capture_release(sqlq_capture *cap, const sqlq_change_batch *b);
int64_t capture_advance(sqlq_capture *cap);
long long capture_pending(sqlq_capture *cap);
long long capture_key_int(const sqlq_change *c, const char *col);
const char *capture_row_str(const sqlq_change *c, const char *col);

#endif
