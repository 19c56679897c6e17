#include "config.h"

#include "buf.h"
#include "log.h"
#include "secret_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Where a value came from, for error messages that say exactly what to fix. */
typedef struct origin {
    char text[160];
} origin;

static char **str_slot(const sqlq_setting *s, void *out)
{
    return (char **)(void *)((char *)out + s->offset);
}

static long long *int_slot(const sqlq_setting *s, void *out)
{
    return (long long *)(void *)((char *)out + s->offset);
}

static bool *bool_slot(const sqlq_setting *s, void *out)
{
    return (bool *)(void *)((char *)out + s->offset);
}

static void flag_name(const sqlq_setting *s, char *out, size_t size)
{
    snprintf(out, size, "--%s", s->key);
    for (char *p = out + 2; *p; p++)
        if (*p == '_')
            *p = '-';
}

bool sqlq_config_choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return true;
        p = bar ? bar + 1 : p + len;
    }
    return false;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* Store one textual value into its slot after checking it. */
static sqlq_result set_value(const sqlq_setting *s, void *out, const char *v, const origin *from,
                             sqlq_error *err)
{
    switch (s->type) {
    case SQLQ_SET_INT: {
        errno = 0;
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end != '\0')
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "%s: '%s' is not an integer (allowed %lld..%lld)", from->text, v,
                                  s->min, s->max);
        if (n < s->min || n > s->max)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "%s: %lld is out of range (allowed %lld..%lld)", from->text, n,
                                  s->min, s->max);
        *int_slot(s, out) = n;
        return SQLQ_OK;
    }
    case SQLQ_SET_BOOL:
        if (!parse_bool(v, bool_slot(s, out)))
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "%s: '%s' is not a boolean (allowed true|false|1|0|yes|no)",
                                  from->text, v);
        return SQLQ_OK;
    case SQLQ_SET_ENUM:
        if (!sqlq_config_choice_ok(s->choices, v))
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s: '%s' is not allowed (allowed %s)",
                                  from->text, v, s->choices);
        break;
    case SQLQ_SET_SECRET:
        sqlq_log_add_secret(v);
        break;
    case SQLQ_SET_STRING:
        break;
    }
    char *copy = strdup(v);
    if (!copy)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    char **slot = str_slot(s, out);
    free(*slot);
    *slot = copy;
    return SQLQ_OK;
}

static char *read_secret_file(const char *path, sqlq_error *err, const char *var)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        sqlq_error_set(err, SQLQ_E_INVALID, false, "environment %s: cannot read '%s': %s", var, path,
                       strerror(errno));
        return NULL;
    }
    sqlq_buf b;
    sqlq_buf_init(&b, 1024 * 1024);
    char chunk[4096];
    size_t n;
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        r = sqlq_buf_add(&b, chunk, n);
    fclose(f);
    if (r != SQLQ_OK) {
        sqlq_error_set(err, SQLQ_E_INVALID, false, "environment %s: '%s' is too large", var, path);
        return NULL;
    }
    /* Docker secrets and editors leave a trailing newline: it is never part of the secret. */
    while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
        b.data[--b.len] = '\0';
    return sqlq_buf_take(&b, NULL);
}

/* A storage account name as Azure accepts it: 3 to 24 lowercase letters and digits. */
static bool account_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 3 || n > 24)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

/* The queue service of identity setting VAR, as Azure Functions (WebJobs) reads it:
 * VAR__queueServiceUri, else https://{VAR__accountName}.queue.core.windows.net. Appends
 * "QueueServiceUri=…" to b and names the variable in from; false when neither is set. */
static bool identity_service(const char *var, sqlq_buf *b, origin *from, sqlq_result *r,
                             sqlq_error *err)
{
    char name[128];
    snprintf(name, sizeof(name), "%s__queueServiceUri", var);
    const char *uri = getenv(name);
    if (uri && *uri) {
        snprintf(from->text, sizeof(from->text), "environment %s", name);
        *r = sqlq_buf_printf(b, "QueueServiceUri=%s", uri);
        return true;
    }
    snprintf(name, sizeof(name), "%s__accountName", var);
    const char *account = getenv(name);
    if (!account || !*account)
        return false;
    snprintf(from->text, sizeof(from->text), "environment %s", name);
    if (!account_name_ok(account))
        *r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                            "%s: '%.40s' is not a storage account name (3 to 24 lowercase "
                            "letters and digits)",
                            from->text, account);
    else
        *r = sqlq_buf_printf(b, "QueueServiceUri=https://%s.queue.core.windows.net", account);
    return true;
}

/* Azure Functions' identity-based connection: VAR__queueServiceUri or VAR__accountName (with
 * VAR__credential and VAR__clientId) for a connection setting VAR that is not set itself, given
 * to the account parser as "QueueServiceUri=…;Credential=…;ClientId=…" (queue/account.h). */
static sqlq_result apply_identity_env(const sqlq_setting *s, void *out, sqlq_error *err)
{
    const char *vars[2] = {s->env, s->alt_env};
    for (size_t i = 0; i < 2; i++) {
        sqlq_buf b;
        sqlq_buf_init(&b, 8192);
        origin from;
        sqlq_result r = SQLQ_OK;
        if (!identity_service(vars[i], &b, &from, &r, err)) {
            sqlq_buf_free(&b);
            continue;
        }
        char name[128];
        snprintf(name, sizeof(name), "%s__credential", vars[i]);
        const char *cred = getenv(name);
        snprintf(name, sizeof(name), "%s__clientId", vars[i]);
        const char *id = getenv(name);
        if (r == SQLQ_OK)
            r = sqlq_buf_printf(&b, "%s%s%s%s", cred && *cred ? ";Credential=" : "",
                                cred ? cred : "", id && *id ? ";ClientId=" : "", id ? id : "");
        if (r == SQLQ_OK)
            r = set_value(s, out, sqlq_buf_str(&b), &from, err);
        else /* the first error recorded wins: an account name refused above stays */
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "%s: too long", from.text);
        sqlq_buf_free(&b);
        return r;
    }
    return SQLQ_OK;
}

static sqlq_result apply_env_value(const sqlq_setting *s, void *out, sqlq_error *err)
{
    const char *vars[2] = {s->env, s->alt_env};
    for (size_t i = 0; i < 2; i++) {
        if (!vars[i])
            continue;
        origin from;
        const char *v = getenv(vars[i]);
        if (v && *v) {
            snprintf(from.text, sizeof(from.text), "environment %s", vars[i]);
            return set_value(s, out, v, &from, err);
        }
        if (s->type == SQLQ_SET_SECRET) {
            char file_var[128];
            snprintf(file_var, sizeof(file_var), "%s_FILE", vars[i]);
            const char *path = getenv(file_var);
            if (path && *path) {
                char *secret = read_secret_file(path, err, file_var);
                if (!secret)
                    return SQLQ_E_INVALID;
                snprintf(from.text, sizeof(from.text), "file %s (from %s)", path, file_var);
                sqlq_result r = set_value(s, out, secret, &from, err);
                free(secret);
                return r;
            }
        }
    }
    return s->alt_env ? apply_identity_env(s, out, err) : SQLQ_OK;
}

/* A secret setting's variables are wiped from the environment once read (secret_env.h), so a
 * process of the same user (an --exec handler) cannot read them in /proc/PID/environ. */
static sqlq_result apply_env(const sqlq_setting *s, void *out, sqlq_error *err)
{
    sqlq_result r = apply_env_value(s, out, err);
    if (s->type == SQLQ_SET_SECRET) {
        sqlq_secret_env_wipe(s->env);
        sqlq_secret_env_wipe(s->alt_env);
    }
    return r;
}

static const sqlq_setting *find_key(const sqlq_config_spec *spec, const char *key)
{
    for (size_t i = 0; i < spec->count; i++)
        if (strcmp(spec->settings[i].key, key) == 0)
            return &spec->settings[i];
    return NULL;
}

/* Set once before any command runs (the only writer is main); read-only afterwards. */
static sqlq_config_known_fn known_elsewhere;

void sqlq_config_set_known_keys(sqlq_config_known_fn fn)
{
    known_elsewhere = fn;
}

static sqlq_result apply_file(const sqlq_config_spec *spec, void *out, json_t *file,
                              const char *path, sqlq_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(file, key, v)
    {
        const sqlq_setting *s = find_key(spec, key);
        if (!s) {
            if ((json_is_array(v) || json_is_object(v)) &&
                (strcmp(key, "routes") == 0 || strcmp(key, "accounts") == 0))
                continue; /* structure the commands read themselves */
            if (strcmp(key, "routes") == 0)
                return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                      "config file %s key routes: expected an array of "
                                      "{\"table\": …, \"queue\": …} objects",
                                      path);
            if (known_elsewhere && known_elsewhere(key))
                continue; /* another sqlq command's setting in a shared file */
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "config file %s: unknown key '%s' for sqlq %s%s", path, key,
                                  spec->command,
                                  known_elsewhere ? " (no sqlq command reads it)" : "");
        }
        origin from;
        snprintf(from.text, sizeof(from.text), "config file %s key %s", path, key);
        char num[64];
        const char *text = NULL;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            text = num;
        } else if (json_is_real(v)) {
            /* no setting takes a fraction: the setting's own check names it and the range */
            snprintf(num, sizeof(num), "%.17g", json_real_value(v));
            text = num;
        } else if (json_is_boolean(v))
            text = json_is_true(v) ? "true" : "false";
        if (!text)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "%s: expected a string, integer or boolean", from.text);
        sqlq_result r = set_value(s, out, text, &from, err);
        if (r != SQLQ_OK)
            return r;
    }
    return SQLQ_OK;
}

static const sqlq_setting *find_flag(const sqlq_config_spec *spec, const char *name, size_t len,
                                     bool *negated)
{
    *negated = false;
    for (int pass = 0; pass < 2; pass++) {
        const char *n = name;
        size_t l = len;
        if (pass == 1) {
            if (len < 3 || strncmp(name, "no-", 3) != 0)
                break;
            n += 3;
            l -= 3;
        }
        for (size_t i = 0; i < spec->count; i++) {
            char flag[96];
            flag_name(&spec->settings[i], flag, sizeof(flag));
            if (strlen(flag + 2) == l && strncmp(flag + 2, n, l) == 0) {
                if (pass == 1 && spec->settings[i].type != SQLQ_SET_BOOL)
                    return NULL;
                *negated = pass == 1;
                return &spec->settings[i];
            }
        }
    }
    return NULL;
}

/* Overwrite a secret given as a flag in the process's own argv, so /proc/PID/cmdline and ps
 * no longer show it once it is parsed (it was visible until then: hence env or _FILE). */
static void scrub_arg(char *v)
{
    size_t n = strlen(v);
    memset(v, 0, n);
    memcpy(v, "***", n < 3 ? n : 3);
}

/* Flags are applied last: parse them into (setting, value) pairs first, collecting --config. */
static sqlq_result apply_flags(const sqlq_config_spec *spec, void *out, int argc, char **argv,
                               sqlq_config_result *res, sqlq_error *err)
{
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == '\0') {
            res->positional[res->npositional++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            res->help = true;
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 6 && strncmp(name, "config", 6) == 0) {
            if (!eq)
                i++; /* the value was consumed by the file pass */
            continue;
        }
        bool negated;
        const sqlq_setting *s = find_flag(spec, name, len, &negated);
        if (!s)
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "unknown option '%.*s' for sqlq %s",
                                  (int)(len + (size_t)(name - a)), a, spec->command);
        origin from;
        flag_name(s, from.text, sizeof(from.text));
        const char *v;
        char *in_argv = NULL; /* where the value sits in argv, to scrub a secret */
        if (s->type == SQLQ_SET_BOOL && !eq)
            v = negated ? "false" : "true";
        else if (eq)
            v = in_argv = a + (eq + 1 - a);
        else if (i + 1 < argc)
            v = in_argv = argv[++i];
        else
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s needs a value", from.text);
        sqlq_result r = set_value(s, out, v, &from, err);
        if (r != SQLQ_OK)
            return r;
        if (s->type == SQLQ_SET_SECRET && in_argv)
            scrub_arg(in_argv);
    }
    return SQLQ_OK;
}

static const char *config_path(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0)
            return argv[i] + 9;
    }
    const char *env = getenv("SQLQ_CONFIG");
    return env && *env ? env : NULL;
}

sqlq_result sqlq_config_load(const sqlq_config_spec *spec, void *out, int argc, char **argv,
                             sqlq_config_result *res, sqlq_error *err)
{
    memset(res, 0, sizeof(*res));
    res->positional = calloc((size_t)(argc > 0 ? argc : 1), sizeof(char *));
    if (!res->positional)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; i < spec->count && r == SQLQ_OK; i++) {
        const sqlq_setting *s = &spec->settings[i];
        if (s->def) {
            origin from;
            snprintf(from.text, sizeof(from.text), "default of %s", s->key);
            r = set_value(s, out, s->def, &from, err);
        }
    }
    const char *path = config_path(argc, argv);
    if (r == SQLQ_OK && path) {
        json_error_t jerr;
        /* A key given twice is refused: which one wins would be a guess (jansson keeps the
         * last), and a setting the operator thinks is in force may not be. */
        res->file = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        const char *near = strstr(jerr.text, "near ");
        if (!res->file && strncmp(jerr.text, "duplicate object key", 20) == 0 && near)
            r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                               "config file %s: the key %s is given twice (line %d): keep one",
                               path, near + 5, jerr.line);
        else if (!res->file)
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "config file %s: %s (line %d)", path,
                               jerr.text, jerr.line);
        else if (!json_is_object(res->file))
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "config file %s: expected a JSON object",
                               path);
        else
            r = apply_file(spec, out, res->file, path, err);
    }
    for (size_t i = 0; i < spec->count && r == SQLQ_OK; i++)
        r = apply_env(&spec->settings[i], out, err);
    if (r == SQLQ_OK)
        r = apply_flags(spec, out, argc, argv, res, err);
    if (r == SQLQ_OK && !res->help &&
        (res->npositional < spec->min_positional || res->npositional > spec->max_positional)) {
        if (spec->min_positional == spec->max_positional)
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "expected %zu argument%s, got %zu",
                               spec->min_positional, spec->min_positional == 1 ? "" : "s",
                               res->npositional);
        else
            r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                               "expected %zu to %zu arguments, got %zu", spec->min_positional,
                               spec->max_positional, res->npositional);
    }
    return r;
}

void sqlq_config_free(const sqlq_config_spec *spec, void *out, sqlq_config_result *res)
{
    for (size_t i = 0; out && i < spec->count; i++) {
        sqlq_setting_type t = spec->settings[i].type;
        if (t == SQLQ_SET_STRING || t == SQLQ_SET_SECRET || t == SQLQ_SET_ENUM) {
            char **slot = str_slot(&spec->settings[i], out);
            free(*slot);
            *slot = NULL;
        }
    }
    if (res) {
        free(res->positional);
        json_decref(res->file);
        memset(res, 0, sizeof(*res));
    }
}

static void describe_value(const sqlq_setting *s, char *out, size_t size)
{
    if (s->type == SQLQ_SET_SECRET)
        snprintf(out, size, "(secret; also %s_FILE)", s->env ? s->env : "");
    else if (s->type == SQLQ_SET_INT)
        snprintf(out, size, "%s (%lld..%lld)", s->def ? s->def : "unset", s->min, s->max);
    else if (s->type == SQLQ_SET_ENUM)
        snprintf(out, size, "%s (%s)", s->def ? s->def : "unset", s->choices);
    else
        snprintf(out, size, "%s", s->def ? s->def : "unset");
}

void sqlq_config_print_help(const sqlq_config_spec *spec, FILE *f)
{
    fprintf(f, "usage: %s\n\n%s\n\noptions (flag / environment variable / default):\n", spec->usage,
            spec->summary);
    for (size_t i = 0; i < spec->count; i++) {
        const sqlq_setting *s = &spec->settings[i];
        char flag[96], val[160];
        flag_name(s, flag, sizeof(flag));
        describe_value(s, val, sizeof(val));
        char shown[200];
        if (s->type == SQLQ_SET_BOOL)
            snprintf(shown, sizeof(shown), "%s, --no-%s", flag, flag + 2);
        else
            snprintf(shown, sizeof(shown), "%s %s", flag, s->type == SQLQ_SET_INT ? "N" : "VALUE");
        fprintf(f, "  %s\n      %s\n      env %s%s%s; default %s\n", shown, s->help,
                s->env ? s->env : "-", s->alt_env ? ", then " : "", s->alt_env ? s->alt_env : "",
                val);
    }
    fprintf(f, "  --config FILE\n      JSON file with the same keys (env SQLQ_CONFIG)\n"
               "  -h, --help\n\nprecedence: defaults < config file < environment < flags\n"
               "exit codes: 0 ok, 1 the operation failed, 2 usage or configuration error\n");
}

/* A Markdown table cell: '|' would end the cell. */
static void md_cell(FILE *f, const char *text)
{
    fputs("| ", f);
    for (const char *p = text; *p; p++) {
        if (*p == '|')
            fputc('\\', f);
        fputc(*p, f);
    }
    fputc(' ', f);
}

void sqlq_config_print_markdown(const sqlq_config_spec *spec, FILE *f)
{
    fprintf(f, "### sqlq %s\n\n`%s`\n\n| key (config file) | flag | environment | default | meaning |\n"
               "|---|---|---|---|---|\n",
            spec->command, spec->usage);
    for (size_t i = 0; i < spec->count; i++) {
        const sqlq_setting *s = &spec->settings[i];
        char key[100], flag[100], env[200], val[160];
        snprintf(key, sizeof(key), "`%s`", s->key);
        flag_name(s, flag + 1, sizeof(flag) - 2);
        flag[0] = '`';
        snprintf(flag + strlen(flag), sizeof(flag) - strlen(flag), "`");
        snprintf(env, sizeof(env), "%s%s%s%s%s%s", s->env ? "`" : "", s->env ? s->env : "-",
                 s->env ? "`" : "", s->alt_env ? ", then `" : "", s->alt_env ? s->alt_env : "",
                 s->alt_env ? "`" : "");
        describe_value(s, val, sizeof(val));
        md_cell(f, key);
        md_cell(f, flag);
        md_cell(f, env);
        md_cell(f, val);
        md_cell(f, s->help);
        fputs("|\n", f);
    }
    fprintf(f, "\n");
}

int sqlq_config_load_or_exit(const sqlq_config_spec *spec, void *out, int argc, char **argv,
                             sqlq_config_result *res)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_config_load(spec, out, argc, argv, res, &err) != SQLQ_OK) {
        bool help = res->help;
        if (help) {
            sqlq_config_print_help(spec, stdout);
            sqlq_config_free(spec, out, res);
            return 0;
        }
        fprintf(stderr, "sqlq %s: %s\n(see sqlq %s --help)\n", spec->command, err.message,
                spec->command);
        sqlq_config_free(spec, out, res); /* callers may free again: it is idempotent */
        return 2;
    }
    if (res->help) {
        sqlq_config_print_help(spec, stdout);
        sqlq_config_free(spec, out, res);
        return 0;
    }
    return -1;
}

void sqlq_common_settings_apply(const sqlq_common_settings *c)
{
    sqlq_log_level level;
    if (c->log_level && sqlq_log_parse_level(c->log_level, &level))
        sqlq_log_set_level(level);
    if (c->log_format)
        sqlq_log_set_format(strcmp(c->log_format, "json") == 0 ? SQLQ_LOG_JSON : SQLQ_LOG_TEXT);
}
