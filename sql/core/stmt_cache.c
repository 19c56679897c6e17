/*
 * stmt_cache: prepared ODBC statements kept by their SQL text.
 *
 * A statement prepared once and executed many times lets the server keep its plan: psqlODBC
 * sends a prepared statement as a named Parse ("_PLAN<address>") and then only Bind/Execute,
 * where SQLExecDirect parses and plans the unnamed statement on every execution.
 */
#include "stmt_cache.h"

#include <sqlext.h>
#include <stdlib.h>
#include <string.h>

SQLHSTMT sqlq_stmt_cache_take(sqlq_stmt_cache *c, const char *sql)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->entries[i].sql, sql) == 0) {
            c->entries[i].used = ++c->tick;
            return c->entries[i].h;
        }
    }
    return NULL;
}

static void entry_free(sqlq_stmt_cache *c, size_t i)
{
    SQLFreeHandle(SQL_HANDLE_STMT, c->entries[i].h);
    free(c->entries[i].sql);
    c->entries[i] = c->entries[--c->n];
}

bool sqlq_stmt_cache_add(sqlq_stmt_cache *c, const char *sql, SQLHSTMT h)
{
    if (c->n == SQLQ_STMT_CACHE_MAX) {
        size_t oldest = 0;
        for (size_t i = 1; i < c->n; i++)
            if (c->entries[i].used < c->entries[oldest].used)
                oldest = i;
        entry_free(c, oldest);
    }
    char *copy = strdup(sql);
    if (!copy) {
        SQLFreeHandle(SQL_HANDLE_STMT, h);
        return false;
    }
    c->entries[c->n++] = (sqlq_stmt_cache_entry){.sql = copy, .h = h, .used = ++c->tick};
    return true;
}

void sqlq_stmt_cache_drop(sqlq_stmt_cache *c, SQLHSTMT h)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->entries[i].h == h) {
            entry_free(c, i);
            return;
        }
    }
}

void sqlq_stmt_cache_clear(sqlq_stmt_cache *c)
{
    while (c->n > 0)
        entry_free(c, c->n - 1);
}
