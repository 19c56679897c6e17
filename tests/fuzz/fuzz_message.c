/* Fuzz: the message library's readers of outside input: a body read back into changes
 * (message/msg_parse.h: row, batch and functions shapes), a repair manifest
 * (message/msg_manifest.h) and the poison envelope recognised by its exact bytes
 * (message/poison_envelope.h), whose message must then lie inside the body. */
#include "msg_manifest.h"
#include "msg_parse.h"
#include "poison_envelope.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    sqlq_msg_parsed p;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_msg_parse(body, size, &p, &err) == SQLQ_OK) {
        for (size_t i = 0; i < p.n; i++)
            if (p.items[i].op > SQLQ_OP_READ ||
                (p.items[i].has_version && (p.items[i].version > SQLQ_MSG_VERSION_MAX ||
                                            p.items[i].version < -SQLQ_MSG_VERSION_MAX)))
                abort();
        sqlq_msg_parsed_free(&p);
    }
    sqlq_msg_manifest m;
    sqlq_error_clear(&err);
    if (sqlq_msg_manifest_parse(body, size, &m, &err) == SQLQ_OK) {
        if (m.run < 0 || (m.kind == SQLQ_MANIFEST_PAGE &&
                          (m.page < 1 || m.part < 1 || m.part > m.parts || !json_is_array(m.keys))))
            abort();
        sqlq_msg_manifest_free(&m);
    }
    const char *inner = NULL;
    size_t inner_len = 0;
    if (sqlq_poison_envelope_read(body, size, &inner, &inner_len) &&
        (inner < body || inner + inner_len > body + size || inner_len == 0))
        abort();
    return 0;
}
