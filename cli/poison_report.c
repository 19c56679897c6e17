#include "poison_report.h"

#include "term_text.h"

#include <string.h>
#include <time.h>

static void utc(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%H:%M:%S UTC", &tm) == 0)
        snprintf(out, size, "the end of their hold");
}

/* Why the run ended early, on its own line; true when it did. A stop wins: what failed
 * after it (a request aborted on the wire) is its consequence, not an outage. */
static bool report_stop(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n)
{
    if (n->interrupted || run->result == SQLQ_E_CANCELLED) {
        fprintf(f, "interrupted (SIGTERM/SIGINT) before the end\n");
        return true;
    }
    if (run->result != SQLQ_OK) {
        char raw[800], line[800];
        sqlq_error_format(run->err, raw, sizeof(raw));
        sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
        fprintf(f, "stopped: %s\n", line);
        return true;
    }
    return false;
}

/* What this run still holds hidden; true when it holds any. */
static bool report_held(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n)
{
    if (!n->held)
        return false;
    char when[32];
    utc(n->held_until, when, sizeof(when));
    fprintf(f, "%llu message(s) in %s are invisible until %s (held by this run); run again "
               "after that\n",
            n->held, run->from, when);
    return true;
}

/* What this run still holds hidden, and what nobody saw; true when anything remains. */
static bool report_hidden(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n,
                          unsigned long long gone, bool ended_early)
{
    bool partial = report_held(f, run, n);
    long long looked_left = (long long)(n->seen - gone); /* looked at and still there */
    if (!ended_early && !run->bounded && !run->dry_run && n->remaining > looked_left) {
        fprintf(f, "about %lld message(s) in %s were not looked at: invisible (held by another "
                   "run, a killed run or a consumer, for up to its visibility timeout) or added "
                   "after the last look (or the service's approximate count is ahead); run again "
                   "later\n",
                n->remaining - looked_left, run->from);
        partial = true;
    }
    if (ended_early && n->remaining >= 0)
        fprintf(f, "about %lld message(s) remain in %s; run again to finish\n", n->remaining,
                run->from);
    return partial;
}

/* Requeue covers what was in the poison queue when it started, not what arrives later: it is
 * partial only when messages that were there then may not have been looked at. */
static bool report_uncovered(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n,
                             bool ended_early)
{
    if (ended_early || run->bounded || run->dry_run || n->at_start < 0)
        return report_hidden(f, run, n, n->moved, ended_early);
    bool partial = report_held(f, run, n);
    long long covered = (long long)(n->seen - n->arrived);
    if (covered < n->at_start) {
        fprintf(f, "about %lld of the %lld message(s) in %s when this run started were not "
                   "looked at: invisible (held by another run, a killed run or a consumer, for up "
                   "to its visibility timeout) (or the service's approximate count is ahead); run "
                   "again later\n",
                n->at_start - covered, n->at_start, run->from);
        partial = true;
    }
    long long now_left = n->remaining - (long long)(n->seen - n->moved - n->arrived);
    if (!partial && n->remaining > 0 && now_left > 0)
        fprintf(f, "about %lld message(s) are in %s now that arrived after this run started (a "
                   "consumer poisoning them again, or new ones): not this run's; the exit code "
                   "does not count them\n",
                now_left, run->from);
    return partial;
}

int sqlq_poison_report_requeue(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n)
{
    bool early = n->interrupted || run->result != SQLQ_OK;
    fprintf(f, "%s %llu message(s) from %s to %s (looked at %llu, matched %llu, failed %llu)%s%s\n",
            run->dry_run ? "would move" : "moved", n->moved, run->from, run->to, n->seen,
            n->matched, n->failed, n->interrupted ? " (interrupted)" : "",
            n->peeked ? " (peeked: nothing was changed)" : "");
    bool stopped = report_stop(f, run, n);
    if (n->arrived) {
        char when[32];
        utc(run->started, when, sizeof(when));
        fprintf(f, "%llu message(s) arrived in %s after this run started (%s): left for the next "
                   "run\n",
                n->arrived, run->from, when);
    }
    if (n->uncertain)
        fprintf(f, "%llu message(s) were in flight: they may be in %s and are still in %s (a "
                   "rerun moves them again: duplicates, nothing lost)\n",
                n->uncertain, run->to, run->from);
    if (n->failed)
        fprintf(f, "%llu message(s) were refused by %s and left in %s (see the log lines)\n",
                n->failed, run->to, run->from);
    bool partial = report_uncovered(f, run, n, early);
    return stopped || partial || n->uncertain || n->failed ? 1 : 0;
}

/* How many exported messages are (or may be) still in the queue, why, then each id on a line
 * of its own, escaped for the terminal. */
static void report_ids(FILE *f, const char *ids, const char *still, const char *why,
                       const sqlq_poison_run *run)
{
    if (!ids || !*ids)
        return;
    size_t count = 0;
    for (const char *p = ids; *p; p++)
        count += *p == '\n';
    fprintf(f, "%zu exported message(s) are in %s and %s in %s (%s):\n", count, run->to, still,
            run->from, why);
    for (const char *p = ids; *p;) {
        size_t len = strcspn(p, "\n");
        char raw[300], line[1300];
        snprintf(raw, sizeof(raw), "%.*s", (int)(len < 299 ? len : 299), p);
        sqlq_term_text_line(raw, line, sizeof(line));
        fprintf(f, "  %s\n", line);
        p += len + (p[len] == '\n');
    }
}

int sqlq_poison_report_export(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n)
{
    bool early = n->interrupted || run->result != SQLQ_OK;
    if (!run->delete_after)
        fprintf(f, "exported %llu message(s) from %s to %s\n", n->moved, run->from, run->to);
    else if (n->deleted == n->moved && !early)
        fprintf(f, "exported %llu message(s) from %s to %s and deleted them\n", n->moved,
                run->from, run->to);
    else
        fprintf(f, "exported %llu message(s) from %s to %s; deleted %llu of them from %s\n",
                n->moved, run->from, run->to, n->deleted, run->from);
    bool stopped = report_stop(f, run, n);
    if (run->removed)
        fprintf(f, "no line was written, so %s was removed again (no empty file is left)\n",
                run->to);
    else if (stopped && run->result == SQLQ_E_IO)
        fprintf(f, "%s ends with the last whole line written (%llu line(s) from this run); "
                   "nothing of the batch that failed was deleted\n",
                run->to, n->moved);
    report_ids(f, run->kept_ids, "still", "not deleted: a later export writes them again", run);
    report_ids(f, run->maybe_ids, "may still be",
               "the delete was in flight when the run stopped, or its answer was lost", run);
    bool partial = report_hidden(f, run, n, n->deleted, early);
    return stopped || partial || n->uncertain ? 1 : 0;
}

/* path as one shell word ('…', a ' written '\''), escaped for the terminal. */
static void shell_quoted(const char *path, char *out, size_t size)
{
    sqlq_buf q;
    sqlq_buf_init(&q, 0);
    sqlq_result r = sqlq_buf_addc(&q, '\'');
    for (const char *p = path ? path : ""; r == SQLQ_OK && *p; p++)
        r = *p == '\'' ? sqlq_buf_adds(&q, "'\\''") : sqlq_buf_addc(&q, *p);
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(&q, '\'');
    sqlq_term_text_line(r == SQLQ_OK ? sqlq_buf_str(&q) : "''", out, size);
    sqlq_buf_free(&q);
}

int sqlq_poison_report_import(FILE *f, const sqlq_poison_run *run, const sqlq_poison_counts *n)
{
    if (run->result != SQLQ_OK && n->moved == 0 && n->uncertain == 0 && n->next_line == 1 &&
        run->result != SQLQ_E_CANCELLED && n->failed == 0) {
        char raw[800], line[800];
        sqlq_error_format(run->err, raw, sizeof(raw));
        sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
        fprintf(f, "nothing was imported into %s: %s\n", run->to, line);
        return 1;
    }
    fprintf(f, "imported %llu message(s) into %s\n", n->moved, run->to);
    bool stopped = report_stop(f, run, n);
    if (n->uncertain)
        fprintf(f, "%llu more may have been imported: the batch in flight when the run stopped\n",
                n->uncertain);
    if (n->failed)
        fprintf(f, "%llu line(s) were refused by %s (the poison.import_refused log lines name "
                   "each one)\n",
                n->failed, run->to);
    if (n->next_line) {
        char quoted[1200];
        shell_quoted(run->file, quoted, sizeof(quoted));
        if (run->file_is_copy)
            fprintf(f, "the input (standard input) is saved in %s\n", quoted);
        if (run->file_named)
            *run->file_named = true;
        fprintf(f, "lines before %llu are in %s; from line %llu on, ", n->next_line, run->to,
                n->next_line);
        if (n->uncertain)
            fprintf(f, "up to %llu may be in %s already; ", n->uncertain, run->to);
        if (n->refused_line)
            fprintf(f, "fix or remove line %llu first (refused), then ", n->refused_line);
        fprintf(f, "to finish: tail -n +%llu %s | sqlq poison import - %s\n", n->next_line,
                quoted, run->to);
    }
    return stopped || n->failed || n->next_line ? 1 : 0;
}
