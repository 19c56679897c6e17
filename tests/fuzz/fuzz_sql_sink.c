/* Fuzz: the --sql sink's message-to-change step (body -> JSON -> changes checked against the
 * target table: the row shape, the batch shape and Azure Functions' shape), and a repair
 * manifest's keys made canonical as the sink records them (consumer/sink_manifest.h). Applying needs a
 * database, so the harness checks what it would apply against a table described by hand
 * (orders: id, shop key; qty, note) through the sink's public parser (consumer/sink_change.h). */
#include "msg_manifest.h"
#include "sink_change.h"

#include <sql.h>
#include <sqlext.h>

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlq_column columns[] = {
    {"id", "integer", SQL_INTEGER, false, true, 1},
    {"shop", "text", SQL_VARCHAR, false, true, 2},
    {"qty", "integer", SQL_INTEGER, true, false, 0},
    {"Note", "text", SQL_VARCHAR, true, false, 0},
};
static size_t key[] = {0, 1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sqlq_table t;
    if (!t.columns) {
        t.columns = columns;
        t.ncolumns = sizeof(columns) / sizeof(columns[0]);
        t.key = key;
        t.nkey = 2;
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_sink_changes l;
    if (sqlq_sink_changes_parse(&t, "public.orders", (const char *)data, size, &l, &err) ==
        SQLQ_OK) {
        for (size_t i = 0; i < l.n; i++) /* what apply reads of each change */
            for (size_t k = 0; k < t.nkey; k++)
                (void)sqlq_sink_key_value(&t, l.items[i].key, &t.columns[t.key[k]]);
    }
    sqlq_sink_changes_free(&l);
    sqlq_msg_manifest m;
    sqlq_error_clear(&err);
    if (sqlq_msg_manifest_parse((const char *)data, size, &m, &err) == SQLQ_OK) {
        size_t i;
        json_t *k;
        json_array_foreach(m.keys, i, k) {
            json_t *canon = NULL;
            sqlq_error_clear(&err);
            if (sqlq_sink_key_canonical(&t, "public.orders", k, &canon, &err) == SQLQ_OK &&
                json_object_size(canon) != t.nkey)
                abort();
            json_decref(canon);
        }
        sqlq_msg_manifest_free(&m);
    }
    return 0;
}
