/* pgoutput_peek: the rows inserted after it was opened, read from a real walsender (libpq,
 * replication=database, a temporary slot, START_REPLICATION … pgoutput proto_version 1) with the
 * text pgoutput sends for each column: just enough of the wire format for tests to compare that
 * text with what other readers of the same row give. Fails the test (cmocka) on any error. */
#ifndef SQLQ_PGOUTPUT_PEEK_H
#define SQLQ_PGOUTPUT_PEEK_H

#include <jansson.h>
#include <stddef.h>

typedef struct pgoutput_peek pgoutput_peek;

/* Connect to dbname on 127.0.0.1:port as sqlq with `options` (the libpq keyword; NULL: none)
 * and create a temporary logical slot with pgoutput: changes committed after this returns are
 * the ones pgoutput_peek_inserts reads. */
pgoutput_peek *pgoutput_peek_open(const char *port, const char *dbname, const char *options);
/* Stream publication's changes until n Insert messages and the commit after the last one have
 * come (within timeout_s): an array of {"table": "schema.name", "columns": [{"name", "oid",
 * "typmod", "text" (string; null for 'n'), "kind": "t" | "n" | "u"}, …]} in commit order. */
json_t *pgoutput_peek_inserts(pgoutput_peek *p, const char *publication, size_t n, int timeout_s);
void pgoutput_peek_close(pgoutput_peek *p);

#endif
