/* outage: one route's record of a fault that stops all of its publishing (the queue service
 * refuses or cannot be reached): since when, the probable cause, a log line when it starts, at
 * most once a minute while it lasts (at once when the cause changes) and one when it ends. */
#ifndef SQLQ_OUTAGE_H
#define SQLQ_OUTAGE_H

#include <stdbool.h>
#include <stdint.h>

#define SQLQ_OUTAGE_LOG_MS 60000u

typedef struct sqlq_outage {
    const char *table, *queue; /* borrowed, for the log lines */
    bool down;
    uint64_t since_ms, last_log_ms;
    unsigned long long failures; /* failed attempts during this outage */
    char cause[400];
} sqlq_outage;

void sqlq_outage_init(sqlq_outage *o, const char *table, const char *queue);
/* A failed attempt at now_ms. cause: the probable cause (what the operator acts on); detail:
 * the service's answer. Returns true when it logged (first failure, a new cause, or a minute
 * since the last line). */
bool sqlq_outage_failed(sqlq_outage *o, uint64_t now_ms, const char *cause, const char *detail);
/* The service answered: logs the end of an outage in progress. */
void sqlq_outage_recovered(sqlq_outage *o, uint64_t now_ms);
/* How long the outage in progress has lasted (0 when none). */
uint64_t sqlq_outage_ms(const sqlq_outage *o, uint64_t now_ms);

#endif
