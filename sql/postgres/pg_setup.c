/* pg_setup: what `sqlq setup` warns about on PostgreSQL once it installed capture for a
 * table (the dialect's setup_warn). */
#include "pg_internal.h"

#include "log.h"

/* A role named like sqlq's schema finds that schema first on the default search_path
 * ("$user", public), so its unqualified names resolve into sqlq's objects. What counts is this
 * session's search_path as the server set it (ALTER ROLE … SET search_path included): an entry
 * "$user" while the role is sqlq, or sqlq itself (quoted or not). Parsed here, not by
 * current_schemas(), which leaves out schema sqlq before the first setup. */
void sqlq_pg_setup_warn(sqlq_db *db)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t same = 0;
    if (sqlq_db_query_int(
            db,
            "SELECT count(*) FROM unnest(string_to_array(current_setting('search_path'), ',')) "
            "AS p(e) WHERE CASE WHEN btrim(e) IN ('\"$user\"', '$user') THEN "
            "CAST(current_user AS text) WHEN btrim(e) LIKE '\"%\"' THEN "
            "replace(substr(btrim(e), 2, length(btrim(e)) - 2), '\"\"', '\"') "
            "ELSE lower(btrim(e)) END = 'sqlq'",
            NULL, 0, &same, &err) == SQLQ_OK &&
        same > 0)
        SQLQ_WARN("role_named_like_schema",
                  "role=sqlq schema=sqlq note=\"this session's search_path (the default: "
                  "\\\"$user\\\", public) resolves the role's unqualified names into sqlq's "
                  "schema (its registry, new tables): connect as a role with another name, or "
                  "ALTER ROLE sqlq SET search_path = public\"");
}
