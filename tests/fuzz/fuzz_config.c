/* Fuzz: the JSON config file loader (sqlq_config_load with --config) over a table holding
 * every kind of setting, as every command's table does. The file is handed over as an
 * in-memory file. */
#include "config.h"
#include "log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct settings {
    sqlq_common_settings common;
    char *table;
    char *password;
    long long interval;
    bool once;
    char *start_from;
} settings;

static const sqlq_setting table[] = {
    SQLQ_COMMON_SETTINGS(settings, common),
    SQLQ_SETTING_STR(settings, table, "table", NULL, NULL, "table"),
    SQLQ_SETTING_SECRET(settings, password, "password", NULL, NULL, "a secret"),
    SQLQ_SETTING_INT(settings, interval, "polling_interval_ms", NULL, "1000", 10, 3600000, "interval"),
    SQLQ_SETTING_BOOL(settings, once, "once", NULL, "false", "once"),
    SQLQ_SETTING_ENUM(settings, start_from, "start_from", NULL, "beginning", "beginning|now", "start"),
};

static const sqlq_config_spec spec = {"fuzz", "sqlq fuzz", "fuzz", table,
                                      sizeof(table) / sizeof(table[0]), 0, 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        sqlq_log_set_level(SQLQ_LOG_ERROR);
        unsetenv("SQLQ_CONFIG");
        fd = memfd_create("fuzz-config", 0);
        if (fd < 0)
            abort();
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    char a0[] = "sqlq", a1[] = "--config", a3[] = "positional";
    char *argv[] = {a0, a1, path, a3, NULL};
    settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    sqlq_error err;
    sqlq_error_clear(&err);
    (void)sqlq_config_load(&spec, &s, 4, argv, &res, &err);
    sqlq_config_free(&spec, &s, &res);
    sqlq_log_clear_secrets();
    return 0;
}
