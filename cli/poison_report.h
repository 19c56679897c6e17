/* poison_report: the last lines of `sqlq poison requeue|export|import`, one rule for all:
 * what was done, what may have been done (in flight when the run stopped) and what remains,
 * and the exit code: 0 only when the run did all it set out to do, else 1. */
#ifndef SQLQ_POISON_REPORT_H
#define SQLQ_POISON_REPORT_H

#include "poison.h"

#include <stdio.h>

typedef struct sqlq_poison_run {
    const char *from;   /* the queue read */
    const char *to;     /* the queue or file written */
    sqlq_result result; /* of the run */
    const sqlq_error *err;
    bool dry_run, delete_after;
    bool bounded;      /* stopped by --limit or --id on purpose: unseen messages are expected */
    int visibility_s;  /* how long what this run received stays hidden */
    int64_t started;   /* epoch s */
    const char *file;  /* import: the file (for the command that finishes the job) */
    bool file_is_copy; /* import: file is where the run saved its standard input */
    bool *file_named;  /* import, optional: set when the report tells the operator to use file */
    bool removed;      /* export: nothing was written, so the new file was removed again */
    /* export --delete: ids of exported messages still in the queue (not deleted), and of those
     * whose delete may or may not have been done; each id followed by '\n' ("" or NULL: none) */
    const char *kept_ids, *maybe_ids;
} sqlq_poison_run;

int sqlq_poison_report_requeue(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n);
int sqlq_poison_report_export(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n);
int sqlq_poison_report_import(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n);

#endif
