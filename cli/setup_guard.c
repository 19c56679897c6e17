/* setup_guard: the refusal of a drop that would lose changes (see the header). */
#include "setup_guard.h"

#include "commands.h"
#include "drop_guard.h"

#include <stdio.h>

int sqlq_setup_drop_guard(sqlq_db *db, const char *table, const char *bridge, bool force)
{
    json_t *found = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_drop_guard_check(db, table, bridge, &found, &err) != SQLQ_OK) {
        char line[700];
        sqlq_error_format(&err, line, sizeof(line));
        fprintf(stderr, "sqlq setup: %s: cannot tell what --drop would discard: %s%s\n", table,
                line, force ? " (--force: dropping anyway)" : "");
        json_decref(found);
        return force ? SQLQ_EXIT_OK : SQLQ_EXIT_FAILED;
    }
    size_t n = json_array_size(found), i;
    json_t *f;
    if (n > 0 && !force)
        fprintf(stderr, "sqlq setup: %s: refusing --drop%s%s: it would lose changes:\n", table,
                bridge ? " of bridge " : "", bridge ? bridge : "");
    json_array_foreach(found, i, f) {
        char text[600];
        sqlq_drop_guard_text(f, text, sizeof(text));
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
