/* setup_guard: the refusal of a drop that would lose changes (see the header). */
#include "setup_guard.h"

#include "commands.h"
#include "drop_guard.h"
#include "term_text.h"

#include <stdio.h>

/* Table and bridge names, and what the database holds (instance ids), are shown escaped
 * (term_text.h). */
int sqlq_setup_drop_guard(sqlq_db *db, const char *table_in, const char *bridge_in, bool force)
{
    char table[SQLQ_TERM_NAME_MAX], bridge_buf[SQLQ_TERM_NAME_MAX];
    sqlq_term_text_name(table_in, table, sizeof(table));
    const char *bridge = bridge_in ? sqlq_term_text_name(bridge_in, bridge_buf, sizeof(bridge_buf))
                                   : NULL;
    json_t *found = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_drop_guard_check(db, table_in, bridge_in, &found, &err) != SQLQ_OK) {
        char raw[700], line[SQLQ_TERM_NAME_MAX];
        sqlq_error_format(&err, raw, sizeof(raw));
        sqlq_term_text_line(raw, line, sizeof(line));
        fprintf(stderr, "sqlq setup: %s: cannot tell what --drop would discard: %s%s\n", table,
                line, force ? " (--force: dropping anyway)"
                            : " (give --force to drop anyway, e.g. what is left of a table "
                              "dropped for good)");
        json_decref(found);
        return force ? SQLQ_EXIT_OK : SQLQ_EXIT_FAILED;
    }
    size_t n = json_array_size(found), i;
    json_t *f;
    if (n > 0 && !force)
        fprintf(stderr, "sqlq setup: %s: refusing --drop%s%s: it would lose changes:\n", table,
                bridge ? " of bridge " : "", bridge ? bridge : "");
    json_array_foreach(found, i, f) {
        char raw[600], text[SQLQ_TERM_NAME_MAX];
        sqlq_drop_guard_text(f, raw, sizeof(raw));
        sqlq_term_text_line(raw, text, sizeof(text));
        if (force)
            printf("%s: --force: discarding: %s\n", table, text);
        else
            fprintf(stderr, "  %s\n", text);
    }
    if (n > 0 && !force)
        fprintf(stderr, "Stop the bridges and let them deliver (sqlq status: pending 0), or "
                        "give --force to drop anyway: what is listed is lost, and a bridge "
                        "still running stops with an error.\n");
    json_decref(found);
    return n > 0 && !force ? SQLQ_EXIT_FAILED : SQLQ_EXIT_OK;
}
