/* config: settings from one declarative table: defaults, then the JSON config file, then
 * environment variables, then command-line flags (later wins). */
#ifndef SQLQ_CONFIG_H
#define SQLQ_CONFIG_H

#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    SQLQ_SET_STRING = 0, /* char *  */
    SQLQ_SET_SECRET,     /* char *; also read from $ENV_FILE; registered as a log secret */
    SQLQ_SET_INT,        /* long long, checked against [min, max] */
    SQLQ_SET_BOOL,       /* bool: --flag / --no-flag, true/false/1/0/yes/no */
    SQLQ_SET_ENUM        /* char *, one of choices "a|b|c" */
} sqlq_setting_type;

typedef struct sqlq_setting {
    const char *key;     /* config-file key; flag is --key with '_' as '-' */
    char short_flag;     /* 0 = none */
    const char *env;     /* environment variable, NULL = none */
    const char *alt_env; /* fallback variable read when env is unset (AzureWebJobsStorage) */
    sqlq_setting_type type;
    const char *def; /* default as text, NULL = unset */
    long long min, max;
    const char *choices; /* ENUM: "beginning|now" */
    const char *help;
    size_t offset; /* offsetof(the settings struct, field) */
} sqlq_setting;

typedef struct sqlq_config_spec {
    const char *command; /* "bridge" */
    const char *usage;   /* "sqlq bridge [options]" */
    const char *summary; /* one paragraph shown by --help */
    const sqlq_setting *settings;
    size_t count;
    size_t min_positional, max_positional;
} sqlq_config_spec;

typedef struct sqlq_config_result {
    bool help;          /* --help was given: help printed to stdout, caller exits 0 */
    char **positional;  /* arguments that are not options (pointers into argv) */
    size_t npositional;
    json_t *file;       /* the whole config file (NULL when none): routes and other structure */
} sqlq_config_result;

/* Fill `out` (a struct the settings' offsets point into). The config file comes from --config
 * PATH or $SQLQ_CONFIG. On a bad value: SQLQ_E_INVALID, err->message naming where it came from,
 * the key, the value and what is allowed, e.g.
 * "--polling-interval-ms: 'abc' is not an integer (allowed 10..3600000)". */
SQLQ_NODISCARD sqlq_result sqlq_config_load(const sqlq_config_spec *spec, void *out, int argc,
                                            char **argv, sqlq_config_result *res, sqlq_error *err);
void sqlq_config_free(const sqlq_config_spec *spec, void *out, sqlq_config_result *res);

/* One config file serves every sqlq command: a key that this command does not read but that
 * fn says another sqlq command reads is ignored; a key no command reads is rejected, named.
 * Set once at start-up (main.c); without it every key the command does not read is rejected. */
typedef bool (*sqlq_config_known_fn)(const char *key);
void sqlq_config_set_known_keys(sqlq_config_known_fn fn);

/* Whether v is one of choices ("a|b|c"). */
bool sqlq_config_choice_ok(const char *choices, const char *v);

void sqlq_config_print_help(const sqlq_config_spec *spec, FILE *f);
/* One Markdown table of every setting: key, flag, environment variable, default, meaning. */
void sqlq_config_print_markdown(const sqlq_config_spec *spec, FILE *f);

/* Convenience for commands: load, print errors, handle --help. Returns -1 to continue, or the
 * exit code to return (0 after --help, 2 after a usage error). */
int sqlq_config_load_or_exit(const sqlq_config_spec *spec, void *out, int argc, char **argv,
                             sqlq_config_result *res);

#define SQLQ_SETTING_STR(st, field, key, env, def, help)                                          \
    {key, 0, env, NULL, SQLQ_SET_STRING, def, 0, 0, NULL, help, offsetof(st, field)}
#define SQLQ_SETTING_INT(st, field, key, env, def, lo, hi, help)                                  \
    {key, 0, env, NULL, SQLQ_SET_INT, def, lo, hi, NULL, help, offsetof(st, field)}
#define SQLQ_SETTING_BOOL(st, field, key, env, def, help)                                         \
    {key, 0, env, NULL, SQLQ_SET_BOOL, def, 0, 0, NULL, help, offsetof(st, field)}
#define SQLQ_SETTING_ENUM(st, field, key, env, def, choices, help)                                \
    {key, 0, env, NULL, SQLQ_SET_ENUM, def, 0, 0, choices, help, offsetof(st, field)}
#define SQLQ_SETTING_SECRET(st, field, key, env, alt, help)                                       \
    {key, 0, env, alt, SQLQ_SET_SECRET, NULL, 0, 0, NULL, help, offsetof(st, field)}

/* The settings every queue-speaking command shares, to embed in its own struct and table. */
typedef struct sqlq_common_settings {
    char *queue_connection; /* --queue-connection / SQLQ_QUEUE_CONNECTION / AzureWebJobsStorage */
    char *encoding;         /* base64 | plain */
    char *log_level;
    char *log_format;       /* text | json */
    bool allow_insecure_http; /* http:// to a host that is not loopback (warned at start-up) */
    char *ca_file;            /* PEM CA bundle instead of the system's */
} sqlq_common_settings;

#define SQLQ_COMMON_SETTINGS(st, member)                                                          \
    {"queue_connection", 0, "SQLQ_QUEUE_CONNECTION", "AzureWebJobsStorage", SQLQ_SET_SECRET,       \
     NULL, 0, 0, NULL,                                                                             \
     "storage connection string, UseDevelopmentStorage=true, queue service URL with SAS, or "      \
     "QueueServiceUri=https://…[;Credential=managedidentity][;ClientId=…] (Microsoft Entra ID; "   \
     "also read from SQLQ_QUEUE_CONNECTION__queueServiceUri or __accountName, or "                 \
     "AzureWebJobsStorage__queueServiceUri or __accountName, with __credential and __clientId)",   \
     offsetof(st, member.queue_connection)},                                                       \
    {"encoding", 0, "SQLQ_ENCODING", NULL, SQLQ_SET_ENUM, "base64", 0, 0, "base64|plain",          \
     "message text encoding (Azure Functions expects base64)", offsetof(st, member.encoding)},     \
    {"log_level", 0, "SQLQ_LOG_LEVEL", NULL, SQLQ_SET_ENUM, "info", 0, 0,                         \
     "error|warn|info|debug|trace", "log level", offsetof(st, member.log_level)},                 \
    {"log_format", 0, "SQLQ_LOG_FORMAT", NULL, SQLQ_SET_ENUM, "text", 0, 0, "text|json",          \
     "log line format: key=value text or JSON lines", offsetof(st, member.log_format)},          \
    {"allow_insecure_http", 0, "SQLQ_ALLOW_INSECURE_HTTP", NULL, SQLQ_SET_BOOL, "false", 0, 0,      \
     NULL, "allow plain http:// to a queue host that is not loopback (tokens sent unencrypted)",   \
     offsetof(st, member.allow_insecure_http)},                                                    \
    {"ca_file", 0, "SQLQ_CA_FILE", NULL, SQLQ_SET_STRING, NULL, 0, 0, NULL,                        \
     "PEM file of CA certificates to trust for https instead of the system's",                     \
     offsetof(st, member.ca_file)}

/* Apply log_level/log_format (after a successful load). */
void sqlq_common_settings_apply(const sqlq_common_settings *c);

#endif
