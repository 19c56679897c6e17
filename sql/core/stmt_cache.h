/* stmt_cache: prepared ODBC statements kept by their SQL text, for one connection. */
#ifndef SQLQ_STMT_CACHE_H
#define SQLQ_STMT_CACHE_H

#include <sql.h>
#include <stdbool.h>
#include <stddef.h>

/* At most this many statements are kept; adding one more frees the least recently used. */
#define SQLQ_STMT_CACHE_MAX 48

typedef struct sqlq_stmt_cache_entry {
    char *sql;
    SQLHSTMT h;
    unsigned long long used; /* tick of the last take: the smallest is dropped first */
} sqlq_stmt_cache_entry;

typedef struct sqlq_stmt_cache {
    sqlq_stmt_cache_entry entries[SQLQ_STMT_CACHE_MAX];
    size_t n;
    unsigned long long tick;
} sqlq_stmt_cache;

/* The prepared handle kept for exactly this SQL text, or NULL. */
SQLHSTMT sqlq_stmt_cache_take(sqlq_stmt_cache *c, const char *sql);
/* Keep h (prepared from sql); on failure to copy the text h is freed and false returned. */
bool sqlq_stmt_cache_add(sqlq_stmt_cache *c, const char *sql, SQLHSTMT h);
/* Free the handle kept for h (after a failed execution: the next one prepares again). */
void sqlq_stmt_cache_drop(sqlq_stmt_cache *c, SQLHSTMT h);
/* Free every handle: before the connection closes. */
void sqlq_stmt_cache_clear(sqlq_stmt_cache *c);

#endif
