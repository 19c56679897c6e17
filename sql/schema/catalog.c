/* catalog: the names of sqlq's objects derived from user tables, resolving user tables to their
 * canonical names, and the types of their key columns. catalog_objects.c has the rest of
 * catalog.h (shared objects and the registry). */
#include "catalog.h"

#include "change_source.h"
#include "dialect_parts.h"
#include "setup_hint.h"

#include "capture_stop.h"
#include "change_log_options.h"
#include "table_key.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BASE_PLAIN_MAX 40
#define BASE_PREFIX_MAX 20

void sqlq_catalog_hash12(const char *a, const char *b, char out[13])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, a, strlen(a)) == 1;
    if (ok && b)
        ok = EVP_DigestUpdate(ctx, "\n", 1) == 1 && EVP_DigestUpdate(ctx, b, strlen(b)) == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 6;
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 6; i++) {
        out[2 * i] = ok ? hex[md[i] >> 4] : '0';
        out[2 * i + 1] = ok ? hex[md[i] & 15] : '0';
    }
    out[12] = '\0';
}

/* [A-Za-z_][A-Za-z0-9_]*, and lowercase only when `lower` is required. */
static bool plain_ident(const char *s, bool lower)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '_') || c >= 0x80 || (lower && isupper(c)))
            return false;
    }
    return true;
}

/* Append one part of a table key: as is when plain, else "double-quoted" with "" doubling, so
 * the key reads as SQL would (PostgreSQL folds unquoted names: there "Mixed" stays quoted). */
static bool key_part(char *out, size_t size, size_t *pos, const char *part, bool fold)
{
    bool quote = !plain_ident(part, fold);
    size_t need = strlen(part) * 2 + 3;
    if (*pos + need >= size)
        return false;
    if (quote)
        out[(*pos)++] = '"';
    for (const char *p = part; *p; p++) {
        if (*p == '"')
            out[(*pos)++] = '"';
        out[(*pos)++] = *p;
    }
    if (quote)
        out[(*pos)++] = '"';
    out[*pos] = '\0';
    return true;
}

/* Ends in '_' and 12 hex digits: the form of a hashed <base>. */
static bool hash_suffixed(const char *s)
{
    size_t n = strlen(s);
    if (n < 13 || s[n - 13] != '_')
        return false;
    for (size_t i = n - 12; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* The table's name as <base> as it is (lowercased): short and plain, in the home schema. A
 * name formed like a hashed base is plain only for `legacy`, what sqlq did before: that let
 * public.orders_aee247e33b26 share the log of s1.orders. */
static bool base_plain(const sqlq_dialect *d, const sqlq_table_name *t, bool legacy)
{
    bool home_schema = !d->schemas || strcmp(t->schema, d->home_schema) == 0;
    return home_schema && strlen(t->name) <= BASE_PLAIN_MAX &&
           plain_ident(t->name, !d->names_ignore_case) && (legacy || !hash_suffixed(t->name));
}

static void make_base(const sqlq_dialect *d, const sqlq_table_name *t, const char *key,
                      bool legacy, char *out, size_t size)
{
    if (base_plain(d, t, legacy)) {
        size_t i = 0;
        for (; t->name[i] && i + 1 < size; i++)
            out[i] = (char)tolower((unsigned char)t->name[i]);
        out[i] = '\0';
        return;
    }
    char prefix[BASE_PREFIX_MAX + 1];
    size_t n = 0;
    for (const char *p = t->name; *p && n < BASE_PREFIX_MAX; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x80 && (isalnum(c) || c == '_'))
            prefix[n++] = (char)tolower(c);
        else if (n > 0 && prefix[n - 1] != '_')
            prefix[n++] = '_';
    }
    prefix[n] = '\0';
    char hash[13];
    sqlq_catalog_hash12(key, NULL, hash);
    snprintf(out, size, "%s%s%s", n ? prefix : "t", "_", hash);
}

static sqlq_result names_fill(const sqlq_dialect *d, const sqlq_table_name *t, const char *bridge,
                              bool legacy, sqlq_catalog_names *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    out->dialect = d;
    out->table = *t;
    if (!t->name[0])
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "empty table name");
    if (bridge && (!bridge[0] || strlen(bridge) > SQLQ_BRIDGE_NAME_MAX))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "bridge name must be 1..%d bytes", SQLQ_BRIDGE_NAME_MAX);
    size_t pos = 0;
    bool ok = true;
    bool fold = d->folds_case;
    if (d->schemas && t->schema[0]) {
        ok = key_part(out->table_key, sizeof(out->table_key), &pos, t->schema, fold);
        if (ok && pos + 1 < sizeof(out->table_key)) {
            out->table_key[pos++] = '.';
            out->table_key[pos] = '\0';
        }
    }
    ok = ok && key_part(out->table_key, sizeof(out->table_key), &pos, t->name, fold);
    if (!ok)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name too long");
    char base[48];
    make_base(d, t, out->table_key, legacy, base, sizeof(base));
    snprintf(out->log_table, sizeof(out->log_table), "log_%s", base);
    snprintf(out->log_function, sizeof(out->log_function), "capture_%s", base);
    if (!d->schemas) /* one namespace: a trigger's name must differ per table */
        snprintf(out->trigger, sizeof(out->trigger), "sqlq_log_%s", base);
    else
        snprintf(out->trigger, sizeof(out->trigger), "sqlq_capture");
    if (bridge) {
        snprintf(out->bridge, sizeof(out->bridge), "%s", bridge);
        char hash[13];
        sqlq_catalog_hash12(bridge, out->table_key, hash);
        snprintf(out->leases_table, sizeof(out->leases_table), "leases_%s", hash);
        snprintf(out->lock_key, sizeof(out->lock_key), "sqlq:%s:%s", bridge, out->table_key);
        snprintf(out->lock_hash, sizeof(out->lock_hash), "sqlq:%s", hash);
    }
    return SQLQ_OK;
}

sqlq_result sqlq_catalog_names_make(const sqlq_dialect *d, const sqlq_table_name *t,
                                    const char *bridge, sqlq_catalog_names *out, sqlq_error *err)
{
    return names_fill(d, t, bridge, false, out, err);
}

void sqlq_catalog_log_display(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "%s%s", n->dialect->object_prefix, n->log_table);
}

/* Whether the registry lists `object` as table_key's change log. */
static sqlq_result registered_as(sqlq_db *db, const char *table_key, const char *object,
                                 bool *out, sqlq_error *err)
{
    *out = false;
    json_t *rows = NULL;
    sqlq_result r = sqlq_catalog_find(db, table_key, "log", NULL, &rows, err);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *name = json_string_value(json_object_get(row, "object_name"));
        if (name && strcmp(name, object) == 0)
            *out = true;
    }
    json_decref(rows);
    return r;
}

sqlq_result sqlq_catalog_names_find(sqlq_db *db, const sqlq_table_name *t, const char *bridge,
                                    sqlq_catalog_names *out, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_result r = names_fill(d, t, bridge, false, out, err);
    if (r != SQLQ_OK || base_plain(d, t, false) || !base_plain(d, t, true))
        return r;
    sqlq_catalog_names legacy;
    char object[128];
    bool kept = false;
    r = names_fill(d, t, bridge, true, &legacy, err);
    sqlq_catalog_log_display(&legacy, object, sizeof(object));
    if (r == SQLQ_OK)
        r = registered_as(db, legacy.table_key, object, &kept, err);
    if (r == SQLQ_OK && kept)
        *out = legacy;
    return r;
}

void sqlq_catalog_object(sqlq_sql_text *s, const char *bare)
{
    if (!s->dialect->schemas) {
        char name[96];
        snprintf(name, sizeof(name), "%s%s", s->dialect->object_prefix, bare);
        sqlq_sql_text_ident(s, name);
        return;
    }
    sqlq_sql_text_ident(s, "sqlq");
    sqlq_sql_text_add(s, ".");
    sqlq_sql_text_ident(s, bare);
}

/* ---- resolving user tables --------------------------------------------------------------- */

static sqlq_result first_row_names(json_t *rows, sqlq_table_name *out, sqlq_error *err)
{
    json_t *row = json_array_get(rows, 0);
    const char *s = json_string_value(json_object_get(row, "s"));
    const char *n = json_string_value(json_object_get(row, "n"));
    if (!n)
        return SQLQ_E_NOT_FOUND;
    if (strlen(n) >= sizeof(out->name) || (s && strlen(s) >= sizeof(out->schema)))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name too long");
    memset(out, 0, sizeof(*out));
    snprintf(out->schema, sizeof(out->schema), "%s", s ? s : "");
    snprintf(out->name, sizeof(out->name), "%s", n);
    return SQLQ_OK;
}

static sqlq_result resolve_query(sqlq_db *db, const char *arg, sqlq_table_name *out,
                                 sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_param p[2] = {sqlq_param_text(arg), sqlq_param_text(arg)};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(db, d->resolve_sql, p, (size_t)d->resolve_nparams, &rows, err);
    if (r == SQLQ_OK)
        r = first_row_names(rows, out, err);
    json_decref(rows);
    return r;
}


sqlq_result sqlq_catalog_resolve(sqlq_db *db, const char *raw, const sqlq_table_name *parsed,
                                 sqlq_table_name *out, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (!d->schemas) {
        if (parsed->schema[0] && strcasecmp(parsed->schema, "main") != 0)
            return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                                  "%s: only tables of the main database can be watched, not %s.%s",
                                  d->title, parsed->schema, parsed->name);
        sqlq_result r = resolve_query(db, parsed->name, out, err);
        if (r == SQLQ_E_NOT_FOUND)
            return sqlq_error_set(err, r, false, "table %s does not exist", parsed->name);
        return r;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_table(&q, parsed);
    char *quoted = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &quoted, err);
    if (r != SQLQ_OK)
        return r;
    r = resolve_query(db, quoted, out, err);
    if (r == SQLQ_E_NOT_FOUND && raw && d->folds_case && strcmp(raw, quoted) != 0) {
        /* Resolve as the server would the text the user typed: unquoted names fold to lowercase
         * and an unqualified name follows search_path. A syntax error only means "not this". */
        sqlq_error ignored;
        sqlq_error_clear(&ignored);
        r = resolve_query(db, raw, out, &ignored);
        if (r != SQLQ_OK && r != SQLQ_E_NOT_FOUND)
            r = SQLQ_E_NOT_FOUND;
    }
    if (r == SQLQ_E_NOT_FOUND)
        sqlq_error_set(err, r, false, "table %s does not exist", raw ? raw : quoted);
    free(quoted);
    return r;
}

sqlq_result sqlq_catalog_lookup(sqlq_db *db, const char *table_text, const char *bridge,
                                sqlq_table **out_table, sqlq_catalog_names *out_names,
                                sqlq_error *err)
{
    return sqlq_catalog_lookup_keyed(db, table_text, bridge, NULL, out_table, out_names, err);
}

void sqlq_catalog_log_name(const sqlq_catalog_names *n, sqlq_table_name *out)
{
    memset(out, 0, sizeof(*out));
    if (!n->dialect->schemas) {
        snprintf(out->name, sizeof(out->name), "%s%s", n->dialect->object_prefix, n->log_table);
    } else {
        snprintf(out->schema, sizeof(out->schema), "sqlq");
        snprintf(out->name, sizeof(out->name), "%s", n->log_table);
    }
}

/* The table's change log as described (its primary key is the key sqlq keys the table by);
 * NULL when there is none. */
static sqlq_result log_table(sqlq_db *db, const sqlq_catalog_names *n, sqlq_table **out,
                             sqlq_error *err)
{
    *out = NULL;
    if (!sqlq_change_source_find(n->dialect, SQLQ_SOURCE_CHANGE_LOG))
        return SQLQ_OK; /* the database keeps no change log of sqlq's */
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(db, n->log_table, &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    sqlq_table_name log;
    sqlq_catalog_log_name(n, &log);
    return sqlq_table_describe_any(db, &log, out, err);
}

/* t's key from the change log lt when no key was named: the log's key, or the primary key. */
static sqlq_result key_of_log(sqlq_db *db, const sqlq_catalog_names *n, const sqlq_table *lt,
                              sqlq_table *t, sqlq_error *err)
{
    if (!lt || (t->nkey > 0 && sqlq_table_key_same(t, lt)))
        return sqlq_table_key_require(db, t, err);
    sqlq_error why;
    sqlq_error_clear(&why);
    sqlq_result r = sqlq_table_key_use_like(db, t, lt, &why);
    if (r == SQLQ_OK || t->nkey > 0) /* a primary key that differs: capture says it changed */
        return SQLQ_OK;
    if (r != SQLQ_E_INVALID)
        return sqlq_error_set(err, r, why.transient, "%s", why.message);
    char logged[1024], arg[SQLQ_SETUP_ARG_MAX];
    sqlq_table_key_names(lt, logged, sizeof(logged));
    sqlq_setup_table_arg(&n->table, NULL, arg, sizeof arg);
    r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                       "table %s has no primary key, and its change log is keyed by (%s), "
                       "which no unique index of NOT NULL columns covers now (%s). Restore "
                       "the index, or `sqlq setup --table %s --drop`, then `sqlq setup "
                       "--table %s --key-columns …`",
                       n->table_key, logged, why.message, arg, arg);
    sqlq_error_reason(err, SQLQ_STOP_KEY_CHANGED);
    return r;
}

/* The key columns setup recorded for the route (SQLQ_CATALOG_KEY_KIND); for a name with no
 * row of its own (a backfill, setup's first look) the one every bridge's row agrees on; ""
 * when none. */
static sqlq_result recorded_key(sqlq_db *db, const sqlq_catalog_names *n, char *out, size_t size,
                                sqlq_error *err)
{
    out[0] = '\0';
    bool own = false, agree = true;
    json_t *rows = NULL;
    sqlq_result r = sqlq_catalog_find(db, n->table_key, SQLQ_CATALOG_KEY_KIND, NULL, &rows, err);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *bridge = json_string_value(json_object_get(row, "bridge_name"));
        const char *cols = json_string_value(json_object_get(row, "object_name"));
        if (!bridge || !cols || own)
            continue;
        own = strcmp(bridge, n->bridge) == 0;
        agree = agree && (!out[0] || strcmp(out, cols) == 0);
        snprintf(out, size, "%s", cols);
    }
    if (!own && !agree)
        out[0] = '\0';
    json_decref(rows);
    return r;
}

/* whose: "change log", or "replication slot" (setup's flags then name the logical source). */
static sqlq_result key_differs(const sqlq_catalog_names *n, const char *given, const char *whose,
                               const char *keyed, sqlq_error *err)
{
    const char *src = strcmp(whose, "change log") == 0 ? "" : " --source logical";
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&n->table, NULL, arg, sizeof arg);
    if (err && err->code == SQLQ_OK)
        sqlq_error_reason(err, SQLQ_STOP_KEY_REFUSED);
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "key key_columns: '%s' of table %s: its %s is keyed by (%s). To change "
                          "the key: `sqlq setup --table %s%s --drop`, then `sqlq setup --table %s%s "
                          "--key-columns %s` (changes not yet delivered go with the old %s)",
                          given, n->table_key, whose, keyed, arg, src, arg, src, given, whose);
}

/* t's key: the given columns, else the change log's, else the recorded ones, else the primary
 * key (see the header). */
static sqlq_result choose_key(sqlq_db *db, const sqlq_catalog_names *n, const char *given,
                              sqlq_table *t, sqlq_error *err)
{
    if (given && strcmp(given, SQLQ_CATALOG_ANY_KEY) == 0)
        return SQLQ_OK;
    sqlq_table *lt = NULL;
    char recorded[512] = "";
    sqlq_result r = log_table(db, n, &lt, err);
    if (r == SQLQ_OK && !lt)
        r = recorded_key(db, n, recorded, sizeof recorded, err);
    if (r == SQLQ_OK && given && *given) {
        r = sqlq_table_key_use(db, t, given, err);
        if (r == SQLQ_OK && lt && !sqlq_table_key_same(t, lt)) {
            char logged[1024];
            sqlq_table_key_names(lt, logged, sizeof(logged));
            r = key_differs(n, given, "change log", logged, err);
        } else if (r == SQLQ_OK && lt && t->key_index) { /* in the log's order (table_key.h) */
            r = sqlq_table_key_use_like(db, t, lt, err);
        } else if (r == SQLQ_OK && recorded[0] && !sqlq_table_key_is(t, recorded)) {
            r = key_differs(n, given, "replication slot", recorded, err);
        }
    } else if (r == SQLQ_OK && recorded[0]) {
        r = sqlq_table_key_use(db, t, recorded, err);
    } else if (r == SQLQ_OK) {
        r = key_of_log(db, n, lt, t, err);
    }
    sqlq_table_free(lt);
    return r;
}

sqlq_result sqlq_catalog_lookup_keyed(sqlq_db *db, const char *table_text, const char *bridge,
                                      const char *key_columns, sqlq_table **out_table,
                                      sqlq_catalog_names *out_names, sqlq_error *err)
{
    *out_table = NULL;
    sqlq_table_name parsed, canon;
    sqlq_result r = sqlq_table_name_parse(table_text, &parsed, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_resolve(db, table_text, &parsed, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_find(db, &canon, bridge, out_names, err);
    if (r == SQLQ_OK)
        r = sqlq_table_describe_any(db, &canon, out_table, err);
    if (r == SQLQ_OK)
        r = choose_key(db, out_names, key_columns, *out_table, err);
    bool any = key_columns && strcmp(key_columns, SQLQ_CATALOG_ANY_KEY) == 0;
    if (r == SQLQ_OK && !any)
        r = sqlq_catalog_check_key(*out_table, err);
    if (r != SQLQ_OK) {
        sqlq_table_free(*out_table);
        *out_table = NULL;
    }
    return r;
}

sqlq_result sqlq_catalog_check_key(const sqlq_table *t, sqlq_error *err)
{
    static const char *const reserved[] = {SQLQ_COL_VERSION,  SQLQ_COL_OP,    SQLQ_COL_ATTEMPTS,
                                           SQLQ_COL_EXPIRES, SQLQ_COL_OWNER, SQLQ_COL_TOKEN,
                                           SQLQ_COL_SINCE};
    if (t->nkey == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table %s has no primary key",
                              t->name.name);
    for (size_t i = 0; i < t->nkey; i++) {
        const char *name = t->columns[t->key[i]].name;
        bool clash = strcasecmp(name, SQLQ_COL_CHANGED) == 0 ||
                     strncasecmp(name, SQLQ_COL_BEFORE_PREFIX, strlen(SQLQ_COL_BEFORE_PREFIX)) == 0;
        for (size_t j = 0; !clash && j < sizeof(reserved) / sizeof(reserved[0]); j++)
            clash = strcasecmp(name, reserved[j]) == 0;
        if (clash)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "primary-key column %s of %s clashes with sqlq's own column "
                                  "of that name (%s, %s, %s, %s, %s, %s, %s, %s, %s<column>): "
                                  "rename it",
                                  name, t->name.name, SQLQ_COL_VERSION, SQLQ_COL_OP,
                                  SQLQ_COL_ATTEMPTS, SQLQ_COL_EXPIRES, SQLQ_COL_OWNER,
                                  SQLQ_COL_TOKEN, SQLQ_COL_SINCE, SQLQ_COL_CHANGED,
                                  SQLQ_COL_BEFORE_PREFIX);
    }
    return SQLQ_OK;
}

/* ---- key column types -------------------------------------------------------------------- */

char *sqlq_catalog_key_type_as_is(json_t *row)
{
    const char *t = json_string_value(json_object_get(row, "t"));
    return strdup(t ? t : ""); /* the catalog's text is DDL as it stands (quoted where needed) */
}

void sqlq_catalog_key_types_free(char **types, size_t n)
{
    if (!types)
        return;
    for (size_t i = 0; i < n; i++)
        free(types[i]);
    free(types);
}

sqlq_result sqlq_catalog_key_types(sqlq_db *db, const sqlq_table *t, char ***out, sqlq_error *err)
{
    *out = NULL;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char *target = NULL;
    sqlq_result r = SQLQ_OK;
    if (!d->schemas) {
        target = strdup(t->name.name);
    } else {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, d);
        sqlq_sql_text_table(&q, &t->name);
        r = sqlq_sql_text_take(&q, &target, err);
    }
    if (r == SQLQ_OK && !target)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    json_t *rows = NULL;
    sqlq_param p = sqlq_param_text(target);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, d->key_types_sql, &p, 1, &rows, err);
    char **types = r == SQLQ_OK ? calloc(t->nkey, sizeof(char *)) : NULL;
    if (r == SQLQ_OK && !types)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < t->nkey; i++) {
        const char *col = t->columns[t->key[i]].name;
        size_t j;
        json_t *row;
        json_array_foreach(rows, j, row) {
            const char *n = json_string_value(json_object_get(row, "n"));
            if (n && strcmp(n, col) == 0) {
                types[i] = d->key_type(row);
                break;
            }
        }
        if (!types[i])
            r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                               "cannot find the type of key column %s", col);
    }
    json_decref(rows);
    free(target);
    if (r != SQLQ_OK) {
        sqlq_catalog_key_types_free(types, t->nkey);
        return r;
    }
    *out = types;
    return SQLQ_OK;
}

void sqlq_catalog_key_defs(sqlq_sql_text *s, const sqlq_table *t, char *const *types)
{
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(s, "%s", i ? ", " : "");
        sqlq_sql_text_ident(s, t->columns[t->key[i]].name);
        sqlq_sql_text_add(s, "%s%s%s", types[i][0] ? " " : "", types[i],
                          s->dialect->key_may_be_null ? "" : " NOT NULL");
    }
}

void sqlq_catalog_key_list(sqlq_sql_text *s, const sqlq_table *t, const char *prefix)
{
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(s, "%s", i ? ", " : "");
        sqlq_sql_text_col(s, prefix, t->columns[t->key[i]].name);
    }
}

void sqlq_catalog_setup_warn(sqlq_db *db)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (d->setup_warn)
        d->setup_warn(db);
}
