/* sink_param: JSON values of a change message bound as statement parameters for the target
 * columns (the types.md mapping read backwards), with the storage they need. */
#ifndef SQLQ_SINK_PARAM_H
#define SQLQ_SINK_PARAM_H

#include "buf.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <jansson.h>

typedef struct sqlq_sink_params {
    sqlq_param *p; /* bind these, n of them */
    size_t n, cap;
    char (*num)[40]; /* numbers formatted as text */
    sqlq_buf *bin;   /* decoded {"$base64": …} */
    char **json;     /* nested objects and arrays as JSON text */
} sqlq_sink_params;

SQLQ_NODISCARD sqlq_result sqlq_sink_params_init(sqlq_sink_params *ps, size_t cap);
void sqlq_sink_params_free(sqlq_sink_params *ps);

/* Append v as the next parameter for column col: null -> NULL; true/false -> 'true'/'false' on
 * PostgreSQL, 1/0 elsewhere; integers -> int64 for integer columns, else exact text; reals ->
 * double for float columns, else text; strings as they are; {"$base64": …} -> binary; other
 * objects and arrays -> their JSON text. The value (and v) must outlive the statement. */
SQLQ_NODISCARD sqlq_result sqlq_sink_params_add(sqlq_sink_params *ps, const sqlq_dialect *d,
                                                const sqlq_column *col, json_t *v, sqlq_error *err);

#endif
