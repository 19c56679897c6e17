/* Fuzz: the --sql sink's message-to-change step (body -> JSON -> changes checked against the
 * target table: the row shape, the batch shape and Azure Functions' shape). Applying needs a
 * database, so the harness checks what it would apply against a table described by hand
 * (orders: id, shop key; qty, note). bridge/sql_sink.c is compiled into the harness to build
 * the sink without connecting. */
#include "../../bridge/sql_sink.c"

#include <stdint.h>

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
    static sqlq_sql_sink s;
    if (!s.table) {
        t.columns = columns;
        t.ncolumns = sizeof(columns) / sizeof(columns[0]);
        t.key = key;
        t.nkey = 2;
        s.table = &t;
        snprintf(s.shown, sizeof(s.shown), "public.orders");
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *root = NULL;
    change_list l = {0};
    if (parse(&s, (const char *)data, size, &root, &l, &err) == SQLQ_OK) {
        for (size_t i = 0; i < l.n; i++) { /* what apply reads of each change */
            for (size_t k = 0; k < t.nkey; k++)
                (void)key_value(&s, l.items[i].key, &t.columns[t.key[k]]);
        }
        changes_free(&l);
        json_decref(root);
    }
    return 0;
}
