#include "poison_view.h"

#include "buf.h"
#include "poison.h"
#include "term_text.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREVIEW_WIDTH 60

static void iso(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, size, "-");
}

/* The decoded body; *utf8 whether it is text. False when the text does not decode. */
static bool decode(sqlq_encoding e, const sqlq_message *m, sqlq_buf *body, bool *utf8)
{
    if (sqlq_codec_decode(e, m->text ? m->text : "", m->text_len, body, NULL) != SQLQ_OK)
        return false;
    json_t *s = json_stringn(sqlq_buf_str(body), body->len);
    *utf8 = s != NULL;
    json_decref(s);
    return true;
}

json_t *sqlq_poison_view_json(sqlq_encoding e, const sqlq_message *m)
{
    char ins[32], exp[32];
    iso(m->insertion_time, ins, sizeof(ins));
    iso(m->expiration_time, exp, sizeof(exp));
    json_t *text = json_stringn(m->text ? m->text : "", m->text_len);
    json_t *body = sqlq_poison_body_json(e, m->text, m->text_len);
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}", "id", m->id, "insertion_time", ins,
                          "expiration_time", exp, "dequeue_count", (json_int_t)m->dequeue_count,
                          "text", text ? text : json_null(), "body", body);
    if (o && json_is_null(body))
        json_object_set_new(o, "body_error",
                            json_string(e == SQLQ_ENCODING_BASE64 ? "the text is not base64"
                                                                  : "the text does not decode"));
    return o;
}

void sqlq_poison_view_print_header(FILE *f)
{
    fprintf(f, "%-36s  %-20s  %3s  %s\n", "ID", "INSERTED", "DEQ",
            "BODY (decoded; or TEXT as stored when it does not decode)");
}

void sqlq_poison_view_print_row(FILE *f, sqlq_encoding e, const sqlq_message *m)
{
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    bool utf8 = false;
    char preview[PREVIEW_WIDTH * 4 + 1], ins[32], id[160];
    const char *label = "";
    bool decoded = decode(e, m, &body, &utf8);
    if (decoded && utf8) {
        sqlq_term_text_preview(sqlq_buf_str(&body), body.len, PREVIEW_WIDTH, preview,
                               sizeof(preview));
    } else {
        label = decoded ? "TEXT (body is binary): " : "TEXT (not base64): ";
        sqlq_term_text_preview(m->text ? m->text : "", m->text_len, PREVIEW_WIDTH, preview,
                               sizeof(preview));
    }
    iso(m->insertion_time, ins, sizeof(ins));
    sqlq_term_text_preview(m->id ? m->id : "", m->id ? strlen(m->id) : 0, 40, id, sizeof(id));
    fprintf(f, "%-36s  %-20s  %3ld  %s%s\n", id, ins, m->dequeue_count, label, preview);
    sqlq_buf_free(&body);
}

static void print_escaped(FILE *f, const char *s, size_t len)
{
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    if (sqlq_term_text_escape(s, len, true, &out) == SQLQ_OK)
        fprintf(f, "%s\n", sqlq_buf_str(&out));
    else
        fprintf(f, "(%zu bytes, not shown: out of memory)\n", len);
    sqlq_buf_free(&out);
}

void sqlq_poison_view_print_show(FILE *f, sqlq_encoding e, const sqlq_message *m)
{
    char ins[32], exp[32];
    iso(m->insertion_time, ins, sizeof(ins));
    iso(m->expiration_time, exp, sizeof(exp));
    sqlq_buf id;
    sqlq_buf_init(&id, 0);
    if (sqlq_term_text_escape(m->id ? m->id : "", m->id ? strlen(m->id) : 0, false, &id) !=
        SQLQ_OK)
        sqlq_buf_reset(&id);
    fprintf(f, "id:              %s\ninserted:        %s\nexpires:         %s\n"
               "dequeue_count:   %ld\n",
            sqlq_buf_str(&id), ins, exp, m->dequeue_count);
    sqlq_buf_free(&id);
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    bool utf8 = false;
    bool decoded = decode(e, m, &body, &utf8);
    if (e == SQLQ_ENCODING_PLAIN) {
        fprintf(f, "body (the text as stored; --encoding plain):\n");
        print_escaped(f, m->text ? m->text : "", m->text_len);
    } else {
        fprintf(f, "text (as stored, %zu bytes):\n", m->text_len);
        print_escaped(f, m->text ? m->text : "", m->text_len);
        if (!decoded)
            fprintf(f, "body: none: the text is not base64 (the text above is the message)\n");
        else {
            fprintf(f, "body (decoded from base64, %zu bytes%s):\n", body.len,
                    utf8 ? "" : ", not UTF-8: such bytes show as \\xNN");
            print_escaped(f, sqlq_buf_str(&body), body.len);
        }
    }
    fprintf(f, "\n");
    sqlq_buf_free(&body);
}
