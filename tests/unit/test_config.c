#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct demo {
    sqlq_common_settings common;
    char *table;
    long long interval;
    bool once;
    char *start_from;
} demo;

static const sqlq_setting demo_settings[] = {
    SQLQ_COMMON_SETTINGS(demo, common),
    SQLQ_SETTING_STR(demo, table, "table", "SQLQ_TEST_TABLE", NULL, "table to watch"),
    SQLQ_SETTING_INT(demo, interval, "polling_interval_ms", "SQLQ_TEST_INTERVAL", "1000", 10, 3600000,
                     "delay between empty polls"),
    SQLQ_SETTING_BOOL(demo, once, "once", NULL, "false", "drain and exit"),
    SQLQ_SETTING_ENUM(demo, start_from, "start_from", NULL, "beginning", "beginning|now",
                      "where a new bridge starts"),
};

static const sqlq_config_spec demo_spec = {
    "demo", "sqlq demo [options] ARG", "A demo.", demo_settings,
    sizeof(demo_settings) / sizeof(demo_settings[0]), 0, 2};

static void clear_env(void)
{
    unsetenv("SQLQ_TEST_TABLE");
    unsetenv("SQLQ_TEST_INTERVAL");
    unsetenv("SQLQ_QUEUE_CONNECTION");
    unsetenv("SQLQ_QUEUE_CONNECTION_FILE");
    unsetenv("AzureWebJobsStorage");
    unsetenv("SQLQ_CONFIG");
    const char *ids[] = {"SQLQ_QUEUE_CONNECTION", "AzureWebJobsStorage"};
    const char *parts[] = {"queueServiceUri", "accountName", "credential", "clientId"};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 4; j++) {
            char name[96];
            snprintf(name, sizeof(name), "%s__%s", ids[i], parts[j]);
            unsetenv(name);
        }
}

static sqlq_result load(demo *d, sqlq_config_result *res, sqlq_error *err, int argc, char **argv)
{
    memset(d, 0, sizeof(*d));
    sqlq_error_clear(err);
    return sqlq_config_load(&demo_spec, d, argc, argv, res, err);
}

static void test_config_defaults_env_flags_precedence(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sqlq-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"table\": \"from_file\", \"polling_interval_ms\": 500, \"routes\": [{\"table\": \"x\"}]}", f);
    fclose(f);
    setenv("SQLQ_TEST_INTERVAL", "700", 1);
    char *argv[] = {"demo", "--config", path, "pos1", "--once", "--start-from=now", NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 6, argv), SQLQ_OK);
    assert_string_equal(d.table, "from_file");      /* file over default */
    assert_int_equal(d.interval, 700);              /* env over file */
    assert_true(d.once);                            /* flag */
    assert_string_equal(d.start_from, "now");
    assert_string_equal(d.common.encoding, "base64"); /* default */
    assert_int_equal(res.npositional, 1);
    assert_string_equal(res.positional[0], "pos1");
    assert_non_null(json_object_get(res.file, "routes"));
    sqlq_config_free(&demo_spec, &d, &res);

    char *argv2[] = {"demo", "--config", path, "--polling-interval-ms", "20", NULL};
    assert_int_equal(load(&d, &res, &err, 5, argv2), SQLQ_OK);
    assert_int_equal(d.interval, 20); /* flag over env */
    sqlq_config_free(&demo_spec, &d, &res);
    unlink(path);
    clear_env();
}

static void test_config_errors_name_key_value_and_allowed(void **state)
{
    (void)state;
    clear_env();
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    char *a1[] = {"demo", "--polling-interval-ms", "abc", NULL};
    assert_int_equal(load(&d, &res, &err, 3, a1), SQLQ_E_INVALID);
    assert_string_equal(err.message, "--polling-interval-ms: 'abc' is not an integer (allowed 10..3600000)");
    sqlq_config_free(&demo_spec, &d, &res);

    char *a2[] = {"demo", "--start-from", "yesterday", NULL};
    assert_int_equal(load(&d, &res, &err, 3, a2), SQLQ_E_INVALID);
    assert_string_equal(err.message, "--start-from: 'yesterday' is not allowed (allowed beginning|now)");
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("SQLQ_TEST_INTERVAL", "5", 1);
    char *a3[] = {"demo", NULL};
    assert_int_equal(load(&d, &res, &err, 1, a3), SQLQ_E_INVALID);
    assert_string_equal(err.message, "environment SQLQ_TEST_INTERVAL: 5 is out of range (allowed 10..3600000)");
    sqlq_config_free(&demo_spec, &d, &res);
    clear_env();

    char *a4[] = {"demo", "--bogus", NULL};
    assert_int_equal(load(&d, &res, &err, 2, a4), SQLQ_E_INVALID);
    assert_string_equal(err.message, "unknown option '--bogus' for sqlq demo");
    sqlq_config_free(&demo_spec, &d, &res);

    char *a5[] = {"demo", "a", "b", "c", NULL};
    assert_int_equal(load(&d, &res, &err, 4, a5), SQLQ_E_INVALID);
    assert_string_equal(err.message, "expected 0 to 2 arguments, got 3");
    sqlq_config_free(&demo_spec, &d, &res);
}

static void test_config_secret_from_file_and_fallback_env(void **state)
{
    (void)state;
    clear_env();
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    char *argv[] = {"demo", NULL};
    setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection, "UseDevelopmentStorage=true");
    sqlq_config_free(&demo_spec, &d, &res);

    char path[] = "/tmp/sqlq-secret-XXXXXX";
    int fd = mkstemp(path);
    assert_true(write(fd, "AccountName=a;AccountKey=c2VjcmV0;\n", 35) == 35);
    close(fd);
    setenv("SQLQ_QUEUE_CONNECTION_FILE", path, 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection, "AccountName=a;AccountKey=c2VjcmV0;"); /* newline cut */
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("SQLQ_QUEUE_CONNECTION_FILE", "/nonexistent/secret", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "SQLQ_QUEUE_CONNECTION_FILE"));
    sqlq_config_free(&demo_spec, &d, &res);
    unlink(path);
    clear_env();
}

/* Azure Functions' identity-based settings: __accountName gives the queue endpoint
 * https://{account}.queue.core.windows.net; __queueServiceUri wins when both are set. */
static void test_config_identity_account_name(void **state)
{
    (void)state;
    clear_env();
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    char *argv[] = {"demo", NULL};
    setenv("AzureWebJobsStorage__accountName", "mystorage01", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection,
                        "QueueServiceUri=https://mystorage01.queue.core.windows.net");
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("AzureWebJobsStorage__credential", "managedidentity", 1);
    setenv("AzureWebJobsStorage__clientId", "c1", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection,
                        "QueueServiceUri=https://mystorage01.queue.core.windows.net;"
                        "Credential=managedidentity;ClientId=c1");
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("AzureWebJobsStorage__queueServiceUri", "https://other.queue.example", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection,
                        "QueueServiceUri=https://other.queue.example;"
                        "Credential=managedidentity;ClientId=c1");
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("SQLQ_QUEUE_CONNECTION__accountName", "sqlqaccount", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection,
                        "QueueServiceUri=https://sqlqaccount.queue.core.windows.net");
    sqlq_config_free(&demo_spec, &d, &res);

    setenv("SQLQ_QUEUE_CONNECTION__accountName", "Bad.Name/x", 1);
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "SQLQ_QUEUE_CONNECTION__accountName"));
    assert_non_null(strstr(err.message, "not a storage account name"));
    sqlq_config_free(&demo_spec, &d, &res);
    clear_env();
}

static void test_config_unknown_file_key_rejected(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sqlq-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(write(fd, "{\"tabel\": \"x\"}", 14) == 14);
    close(fd);
    char *argv[] = {"demo", "--config", path, NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "unknown key 'tabel'"));
    sqlq_config_free(&demo_spec, &d, &res);
    unlink(path);
    /* a misspelt structure ("route" for "routes") is refused too, not skipped */
    const char *structs[] = {"{\"route\": [{\"table\": \"t\", \"queue\": \"q\"}]}",
                             "{\"tabel\": {\"x\": 1}}"};
    const char *names[] = {"unknown key 'route'", "unknown key 'tabel'"};
    for (size_t i = 0; i < 2; i++) {
        char p2[] = "/tmp/sqlq-config-XXXXXX";
        int fd2 = mkstemp(p2);
        assert_true(write(fd2, structs[i], strlen(structs[i])) == (ssize_t)strlen(structs[i]));
        close(fd2);
        char *argv2[] = {"demo", "--config", p2, NULL};
        assert_int_equal(load(&d, &res, &err, 3, argv2), SQLQ_E_INVALID);
        assert_non_null(strstr(err.message, names[i]));
        sqlq_config_free(&demo_spec, &d, &res);
        unlink(p2);
    }
}

/* A JSON number with a fraction given to an integer setting is refused by that setting's own
 * check, naming the value and the range (not "expected a string, integer or boolean"). */
static void test_config_file_fraction_named_with_range(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sqlq-config-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"polling_interval_ms\": 1.5}";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    char *argv[] = {"demo", "--config", path, NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "key polling_interval_ms: '1.5' is not an integer (allowed 10..3600000)"));
    sqlq_config_free(&demo_spec, &d, &res);
    unlink(path);
}

/* A key given twice is refused, naming the key and its line: which one wins would be a guess;
 * so is one given twice inside a route. */
static void test_config_duplicate_key_refused(void **state)
{
    (void)state;
    clear_env();
    const char *texts[] = {"{\"table\": \"a\",\n \"table\": \"b\"}",
                           "{\"routes\": [{\"table\": \"a\", \"queue\": \"q\", \"queue\": \"r\"}]}"};
    const char *keys[] = {"\"table\"", "\"queue\""};
    for (size_t i = 0; i < 2; i++) {
        char path[] = "/tmp/sqlq-config-XXXXXX";
        int fd = mkstemp(path);
        assert_true(write(fd, texts[i], strlen(texts[i])) == (ssize_t)strlen(texts[i]));
        close(fd);
        char *argv[] = {"demo", "--config", path, NULL};
        demo d;
        sqlq_config_result res;
        sqlq_error err;
        assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_E_INVALID);
        assert_non_null(strstr(err.message, keys[i]));
        assert_non_null(strstr(err.message, "given twice"));
        sqlq_config_free(&demo_spec, &d, &res);
        unlink(path);
    }
}

/* A secret read from the environment is wiped from it once read; the value is kept. */
static void test_config_secret_env_wiped(void **state)
{
    (void)state;
    clear_env();
    setenv("SQLQ_QUEUE_CONNECTION", "UseDevelopmentStorage=true", 1);
    setenv("SQLQ_TEST_TABLE", "orders", 1);
    char *argv[] = {"demo", NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 1, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection, "UseDevelopmentStorage=true");
    assert_null(getenv("SQLQ_QUEUE_CONNECTION"));
    assert_string_equal(getenv("SQLQ_TEST_TABLE"), "orders"); /* not a secret: stays */
    sqlq_config_free(&demo_spec, &d, &res);
    clear_env();
}

/* {"routes":"orders"} is a routes problem, not an unknown key. */
static void test_config_routes_not_an_array_named(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sqlq-config-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"routes\": \"orders\"}";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    char *argv[] = {"demo", "--config", path, NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_E_INVALID);
    assert_null(strstr(err.message, "unknown key"));
    assert_non_null(strstr(err.message, "key routes: expected an array"));
    sqlq_config_free(&demo_spec, &d, &res);
    unlink(path);
}

/* A secret given as a flag does not show in argv (/proc/PID/cmdline) once parsed. */
static void test_config_secret_flags_scrubbed_from_argv(void **state)
{
    (void)state;
    clear_env();
    char a1[] = "--queue-connection";
    char a2[] = "AccountName=a;AccountKey=c2VjcmV0LWZsYWc=";
    char a3[] = "--queue-connection=AccountName=b;AccountKey=c2Vjb25kLXNlY3JldA==";
    char a4[] = "--table";
    char a5[] = "orders";
    char *argv[] = {"demo", a1, a2, a3, a4, a5, NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    assert_int_equal(load(&d, &res, &err, 6, argv), SQLQ_OK);
    assert_string_equal(d.common.queue_connection, "AccountName=b;AccountKey=c2Vjb25kLXNlY3JldA==");
    assert_string_equal(argv[2], "***");
    assert_string_equal(argv[3], "--queue-connection=***");
    assert_string_equal(argv[5], "orders"); /* not a secret: untouched */
    for (size_t i = 3; i < sizeof(a2); i++)
        assert_int_equal(a2[i], '\0'); /* nothing of the value is left behind the *** */
    sqlq_config_free(&demo_spec, &d, &res);
}

/* A load that fails (`backfill --batch-size 0`) frees the settings loaded so far (LSan). */
static void test_config_load_or_exit_frees_on_error(void **state)
{
    (void)state;
    clear_env();
    char *argv[] = {"demo", "--table", "t", "--polling-interval-ms", "0", NULL};
    demo d;
    memset(&d, 0, sizeof(d));
    sqlq_config_result res;
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int code = sqlq_config_load_or_exit(&demo_spec, &d, 5, argv, &res);
    fclose(stderr);
    stderr = saved;
    assert_int_equal(code, 2);
    assert_null(d.table);
    assert_null(d.common.encoding); /* a default: allocated before the error */
    assert_null(res.positional);
    sqlq_config_free(&demo_spec, &d, &res); /* a second free is harmless */
}

static bool other_command_reads(const char *key)
{
    return strcmp(key, "db") == 0 || strcmp(key, "limit") == 0;
}

/* A shared file: keys other sqlq commands read are ignored, a key nobody reads is named. */
static void test_config_shared_file_ignores_other_commands_keys(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sqlq-config-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "{\"table\": \"t\", \"db\": \"x\", \"limit\": 5}";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    char *argv[] = {"demo", "--config", path, NULL};
    demo d;
    sqlq_config_result res;
    sqlq_error err;
    sqlq_config_set_known_keys(other_command_reads);
    assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_OK);
    assert_string_equal(d.table, "t");
    sqlq_config_free(&demo_spec, &d, &res);
    fd = open(path, O_WRONLY | O_TRUNC);
    text = "{\"table\": \"t\", \"db\": \"x\", \"nobody_reads\": 1}";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(load(&d, &res, &err, 3, argv), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "unknown key 'nobody_reads'"));
    assert_non_null(strstr(err.message, "no sqlq command reads it"));
    sqlq_config_free(&demo_spec, &d, &res);
    sqlq_config_set_known_keys(NULL);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_env_flags_precedence),
        cmocka_unit_test(test_config_errors_name_key_value_and_allowed),
        cmocka_unit_test(test_config_secret_from_file_and_fallback_env),
        cmocka_unit_test(test_config_identity_account_name),
        cmocka_unit_test(test_config_unknown_file_key_rejected),
        cmocka_unit_test(test_config_file_fraction_named_with_range),
        cmocka_unit_test(test_config_duplicate_key_refused),
        cmocka_unit_test(test_config_secret_env_wiped),
        cmocka_unit_test(test_config_routes_not_an_array_named),
        cmocka_unit_test(test_config_secret_flags_scrubbed_from_argv),
        cmocka_unit_test(test_config_load_or_exit_frees_on_error),
        cmocka_unit_test(test_config_shared_file_ignores_other_commands_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
