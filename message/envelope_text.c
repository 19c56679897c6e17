/* envelope_text: a change's row-format element written straight as text (envelope_text.h). */
#include "envelope_text.h"

#include "buf.h"
#include "json_text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static sqlq_result member(sqlq_buf *b, const char *name)
{
    sqlq_result rc = sqlq_buf_addc(b, ',');
    if (rc == SQLQ_OK)
        rc = sqlq_json_text_add_string(b, name, strlen(name));
    return rc == SQLQ_OK ? sqlq_buf_addc(b, ':') : rc;
}

static sqlq_result member_value(sqlq_buf *b, const char *name, const json_t *v)
{
    sqlq_result rc = member(b, name);
    return rc == SQLQ_OK ? sqlq_json_text_add(b, v, false) : rc;
}

static sqlq_result member_string(sqlq_buf *b, const char *name, const char *s)
{
    sqlq_result rc = member(b, name);
    return rc == SQLQ_OK ? sqlq_json_text_add_string(b, s, strlen(s)) : rc;
}

static sqlq_result member_literal(sqlq_buf *b, const char *name, const char *text)
{
    sqlq_result rc = member(b, name);
    return rc == SQLQ_OK ? sqlq_buf_adds(b, text) : rc;
}

/* "changed" on an update, "before" on an update or a delete, as the route asks. */
static sqlq_result images(sqlq_buf *b, const sqlq_msg_change *ch, sqlq_op op, bool no_before)
{
    sqlq_result rc = SQLQ_OK;
    if (ch->changed && op == SQLQ_OP_UPDATE)
        rc = member_value(b, "changed", ch->changed);
    if (rc == SQLQ_OK && !no_before && ch->before &&
        (op == SQLQ_OP_UPDATE || op == SQLQ_OP_DELETE))
        rc = member_value(b, "before", ch->before);
    return rc;
}

char *sqlq_envelope_text_row(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch,
                             int64_t ts_ms, bool truncated, bool no_before, size_t *out_len)
{
    char id[33], ts[25], version[24];
    if (sqlq_envelope_id(cfg->bridge_name, cfg->table, ch->key, ch->version, id, NULL) != SQLQ_OK)
        return NULL;
    sqlq_envelope_format_ts(ts_ms, ts);
    snprintf(version, sizeof version, "%lld", (long long)ch->version);
    sqlq_op op = ch->row ? ch->op : SQLQ_OP_DELETE; /* a row gone is, now, a delete */
    sqlq_buf b;
    sqlq_buf_init(&b, SIZE_MAX / 4);
    sqlq_result rc = sqlq_buf_adds(&b, "{\"id\":");
    if (rc == SQLQ_OK)
        rc = sqlq_json_text_add_string(&b, id, 32);
    if (rc == SQLQ_OK)
        rc = member_string(&b, "op", sqlq_op_name(op));
    if (rc == SQLQ_OK)
        rc = member_string(&b, "table", cfg->table);
    if (rc == SQLQ_OK)
        rc = member_value(&b, "key", ch->key);
    if (rc == SQLQ_OK && !truncated && op != SQLQ_OP_READ)
        rc = op == SQLQ_OP_DELETE ? member_literal(&b, "row", "null")
                                  : member_value(&b, "row", ch->row);
    if (rc == SQLQ_OK && !truncated)
        rc = images(&b, ch, op, no_before);
    if (rc == SQLQ_OK)
        rc = member_literal(&b, "version", version);
    if (rc == SQLQ_OK)
        rc = member_string(&b, "bridge", cfg->bridge_name);
    if (rc == SQLQ_OK)
        rc = member_string(&b, "ts", ts);
    if (rc == SQLQ_OK && !truncated && op == SQLQ_OP_READ)
        rc = member_value(&b, "row", ch->row);
    if (rc == SQLQ_OK && truncated)
        rc = member_literal(&b, "truncated", "true");
    if (rc == SQLQ_OK && no_before)
        rc = member_literal(&b, "before_truncated", "true");
    if (rc == SQLQ_OK)
        rc = sqlq_buf_addc(&b, '}');
    return rc == SQLQ_OK ? sqlq_buf_take(&b, out_len) : NULL;
}
