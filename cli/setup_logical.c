/* setup_logical: `sqlq setup --source logical` (and --drop) of one table: what it prints. */
#include "setup_logical.h"

#include "commands.h"
#include "logical_source.h"

#include <stdio.h>

int sqlq_setup_logical(sqlq_db *db, const char *table, const char *key_columns,
                       const char *bridge_name, bool full_identity, bool drop)
{
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.table = table;
    cc.source = SQLQ_SOURCE_LOGICAL;
    cc.key_columns = key_columns;
    if (bridge_name && *bridge_name)
        cc.bridge_name = bridge_name;
    cc.before_image = full_identity;
    json_t *lines = json_array(), *warnings = json_array();
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result rc = sqlq_logical_source_setup(db, &cc, drop, lines, warnings, &err);
    size_t i;
    json_t *v;
    json_array_foreach(warnings, i, v)
        printf("%s: warning: %s\n", table, json_string_value(v));
    json_array_foreach(lines, i, v)
        printf("%s: %s\n", table, json_string_value(v));
    json_decref(lines);
    json_decref(warnings);
    if (rc == SQLQ_OK)
        return SQLQ_EXIT_OK;
    char line[700];
    sqlq_error_format(&err, line, sizeof(line));
    fprintf(stderr, "sqlq setup: %s: %s\n", table, line);
    return SQLQ_EXIT_FAILED;
}
