/* Fuzz: the pgoutput decoder (sql/postgres/pgoutput.c) on arbitrary bytes: it must never read
 * outside the message (ASan), and whatever it decodes points inside the input. */
#include "pgoutput.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *p, size_t n, const char *buf, size_t size) {
    if (n && (p < buf || p + n > buf + size))
        abort();
}

static void check_tuple(const sqlq_pgo_tuple *t, const char *buf, size_t size) {
    for (uint16_t i = 0; i < t->ncols; i++) {
        const sqlq_pgo_value *v = &t->cols[i];
        if (v->kind != 'n' && v->kind != 'u' && v->kind != 't' && v->kind != 'b')
            abort();
        inside(v->data, v->len, buf, size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* exactly the input: ASan sees any over-read */
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    sqlq_pgo_msg m;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_pgoutput_decode(buf, size, &m, &err) == SQLQ_OK) {
        switch (m.kind) {
        case SQLQ_PGO_RELATION:
            for (uint16_t i = 0; i < m.u.relation.ncols; i++)
                inside(m.u.relation.cols[i].name, strlen(m.u.relation.cols[i].name) + 1, buf, size);
            break;
        case SQLQ_PGO_INSERT:
        case SQLQ_PGO_UPDATE:
        case SQLQ_PGO_DELETE:
            check_tuple(&m.u.change.old_tuple, buf, size);
            check_tuple(&m.u.change.new_tuple, buf, size);
            break;
        case SQLQ_PGO_MESSAGE:
            inside(m.u.message.content, m.u.message.len, buf, size);
            break;
        default:
            break;
        }
        sqlq_pgoutput_free(&m);
    }
    free(buf);
    return 0;
}
