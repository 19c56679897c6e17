/* listen_count: counts the notifications a PostgreSQL channel receives, for
 * bench/wakeup_writes.py (how many commits notified).
 *
 * LISTENs on each channel named, prints "ready", then reads its stdin: each line asks for the
 * counts so far, printed as one JSON line {"<channel>": n, ...}; end of input ends it (after
 * printing the counts once more). Reads the connection whenever it is readable, so the server
 * never waits to hand a notification over.
 *
 *   listen_count CONNINFO CHANNEL...
 *
 * Built by bench/setup.sh (cc -O2 listen_count.c -lpq), not by the product build. */
#include <libpq-fe.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CHANNELS 8

static void print_counts(int n, char **names, const long *counts)
{
    printf("{");
    for (int i = 0; i < n; i++)
        printf("%s\"%s\": %ld", i ? ", " : "", names[i], counts[i]);
    printf("}\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc - 2 > MAX_CHANNELS) {
        fprintf(stderr, "usage: listen_count CONNINFO CHANNEL... (at most %d)\n", MAX_CHANNELS);
        return 2;
    }
    PGconn *c = PQconnectdb(argv[1]);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "listen_count: %s", PQerrorMessage(c));
        return 1;
    }
    int n = argc - 2;
    char **names = argv + 2;
    long counts[MAX_CHANNELS] = {0};
    for (int i = 0; i < n; i++) {
        char *id = PQescapeIdentifier(c, names[i], strlen(names[i]));
        char sql[256];
        snprintf(sql, sizeof(sql), "LISTEN %s", id);
        PQfreemem(id);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "listen_count: %s", PQerrorMessage(c));
            return 1;
        }
        PQclear(r);
    }
    printf("ready\n");
    fflush(stdout);
    char line[256];
    for (;;) {
        struct pollfd p[2] = {{PQsocket(c), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[0].revents) {
            if (!PQconsumeInput(c)) {
                fprintf(stderr, "listen_count: %s", PQerrorMessage(c));
                return 1;
            }
            PGnotify *m;
            while ((m = PQnotifies(c)) != NULL) {
                for (int i = 0; i < n; i++)
                    if (strcmp(m->relname, names[i]) == 0)
                        counts[i]++;
                PQfreemem(m);
            }
        }
        if (p[1].revents) {
            if (!fgets(line, sizeof(line), stdin))
                break;
            print_counts(n, names, counts);
        }
    }
    print_counts(n, names, counts);
    PQfinish(c);
    return 0;
}
