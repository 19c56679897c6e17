/* pg_arm: whether a PostgreSQL listener holds its change log's wake-up lock ("armed"), and
 * what the answer of an arm tells the route (pure: no I/O; pg_listen.c runs the statements).
 *
 * The capture trigger notifies only when its pg_try_advisory_xact_lock_shared(K) fails, that is
 * while a bridge holds K exclusively or waits for it. A listener arms before it waits: one
 * statement string takes K (pg_advisory_lock, session level) and then reads the version
 * sequence's last value L. It is granted only once every writer that took K shared (and so will
 * not notify) has ended, and those writers take their versions after their try, so each of
 * them either ended before L was read, with every version <= L, or began after the listener
 * let K go, with every version above L. The arm is a hint (poll) when L is above both what the
 * route's last poll covered and the L of the previous arm (docs/capture.md, Wake-ups). */
#ifndef SQLQ_PG_ARM_H
#define SQLQ_PG_ARM_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    SQLQ_PG_ARM_OFF = 0,   /* holds nothing, no statement in flight */
    SQLQ_PG_ARM_PENDING,   /* the arm is sent: waiting for K (behind writers or another
                              bridge), then for L */
    SQLQ_PG_ARM_ON,        /* holds K: every commit from now on notifies */
    SQLQ_PG_ARM_RELEASING, /* the unlock is sent, its answer not read yet */
} sqlq_pg_arm_state;

/* After an arm failed (not its lock_timeout): the first back-off step and the longest. */
#define SQLQ_PG_ARM_RETRY_FIRST_MS 1000u
#define SQLQ_PG_ARM_RETRY_MAX_MS 60000u

typedef struct sqlq_pg_arm {
    sqlq_pg_arm_state state;
    bool release_on_grant;     /* a hint came while PENDING: let K go once granted */
    int64_t last_l;            /* L of the last answered arm on this connection; INT64_MIN: none */
    uint64_t waiting_since_ms; /* when the arm being waited for was first sent (through lock
                                  timeouts); 0: none */
    bool wait_logged;          /* the long wait was logged */
    uint64_t not_before_ms;    /* after a failure: no arm before this */
    uint64_t retry_ms;         /* the back-off step of the next failure */
} sqlq_pg_arm;

/* A new connection (or none): nothing held, no L known. */
void sqlq_pg_arm_init(sqlq_pg_arm *a);
/* Whether an arm should be sent now, before a wait: OFF and not backing off. */
bool sqlq_pg_arm_due(const sqlq_pg_arm *a, uint64_t now_ms);
void sqlq_pg_arm_sent(sqlq_pg_arm *a, uint64_t now_ms);
/* The arm was answered: K is held and the sequence read l. covered: every version at or below
 * it that will ever commit was seen by the route's last poll (sqlq_capture_covered_version,
 * INT64_MIN when unknown). Returns true when the answer is a hint: l is above both covered and
 * the previous arm's L. *release: send the unlock now (on a hint, now or one that came while
 * the arm was pending); the state is then RELEASING, else ON. */
bool sqlq_pg_arm_granted(sqlq_pg_arm *a, int64_t l, int64_t covered, bool *release);
/* A hint from elsewhere (a notification): true when the unlock should be sent now (ON); while
 * PENDING it is sent once granted. */
bool sqlq_pg_arm_hint(sqlq_pg_arm *a);
/* The unlock was answered. */
void sqlq_pg_arm_released(sqlq_pg_arm *a);
/* The arm failed. lock_timeout: its wait ran out (the listener's lock_timeout): K is not held,
 * and the next wait sends it again. Otherwise the next arm waits a back-off step (doubling
 * from SQLQ_PG_ARM_RETRY_FIRST_MS to SQLQ_PG_ARM_RETRY_MAX_MS; *out_retry_ms) and the unlock
 * must be sent (true: K may be held, when the lock was taken and the sequence read failed). */
bool sqlq_pg_arm_failed(sqlq_pg_arm *a, bool lock_timeout, uint64_t now_ms, uint64_t *out_retry_ms);
/* How long the arm in flight has waited (0 when none is pending). */
uint64_t sqlq_pg_arm_waited_ms(const sqlq_pg_arm *a, uint64_t now_ms);

#endif
