#include "xml.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { DOC_MESSAGES, DOC_QUEUES, DOC_ERROR } doc_kind;

/* Element names inside the documents we read never nest deeper than this. */
#define MAX_DEPTH 8

typedef struct reader {
    XML_Parser parser;
    doc_kind kind;
    int depth;
    const char *stack[MAX_DEPTH]; /* names of open elements we care about (static strings) */
    sqlq_buf text;                /* character data of the innermost element */
    sqlq_result failed;
    char failure[160];
    /* DOC_MESSAGES */
    sqlq_message_list msgs;
    size_t msgs_cap;
    /* DOC_QUEUES */
    char **names;
    size_t nnames, names_cap;
    char *next_marker;
    /* DOC_ERROR */
    char *code, *message;
} reader;

static const char *const root_names[] = {"QueueMessagesList", "EnumerationResults", "Error"};

static void fail(reader *r, sqlq_result code, const char *why)
{
    if (r->failed == SQLQ_OK) {
        r->failed = code;
        snprintf(r->failure, sizeof(r->failure), "%s", why);
    }
    XML_StopParser(r->parser, XML_FALSE);
}

/* The interned name for known elements (so the stack holds no copies); NULL for others. */
static const char *known(const char *name)
{
    static const char *const names[] = {
        "QueueMessagesList", "QueueMessage", "MessageId",  "InsertionTime", "ExpirationTime",
        "PopReceipt",        "TimeNextVisible", "DequeueCount", "MessageText", "EnumerationResults",
        "Queues",            "Queue",      "Name",          "NextMarker",    "Error",
        "Code",              "Message"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return names[i];
    return NULL;
}

static bool at(const reader *r, const char *parent, const char *name)
{
    return r->depth >= 2 && r->stack[r->depth - 1] && r->stack[r->depth - 2] &&
           strcmp(r->stack[r->depth - 2], parent) == 0 && strcmp(r->stack[r->depth - 1], name) == 0;
}

static void XMLCALL on_start(void *ctx, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    reader *r = ctx;
    if (r->failed != SQLQ_OK)
        return;
    if (r->depth == 0 && strcmp(name, root_names[r->kind]) != 0) {
        fail(r, SQLQ_E_PARSE, "unexpected root element");
        return;
    }
    if (r->depth >= MAX_DEPTH) {
        fail(r, SQLQ_E_PARSE, "elements nested too deeply");
        return;
    }
    r->stack[r->depth++] = known(name);
    sqlq_buf_reset(&r->text);
    if (r->kind == DOC_MESSAGES && at(r, "QueueMessagesList", "QueueMessage")) {
        if (r->msgs.count == r->msgs_cap) {
            size_t cap = r->msgs_cap ? r->msgs_cap * 2 : 4;
            sqlq_message *items = realloc(r->msgs.items, cap * sizeof(*items));
            if (!items) {
                fail(r, SQLQ_E_NOMEM, "out of memory");
                return;
            }
            r->msgs.items = items;
            r->msgs_cap = cap;
        }
        memset(&r->msgs.items[r->msgs.count++], 0, sizeof(sqlq_message));
    }
}

static void XMLCALL on_text(void *ctx, const XML_Char *s, int len)
{
    reader *r = ctx;
    if (r->failed == SQLQ_OK && sqlq_buf_add(&r->text, s, (size_t)len) != SQLQ_OK)
        fail(r, SQLQ_E_NOMEM, "element text too large");
}

static bool set_string(reader *r, char **field)
{
    free(*field);
    *field = sqlq_slice_dup((sqlq_slice){sqlq_buf_str(&r->text), r->text.len});
    if (!*field)
        fail(r, SQLQ_E_NOMEM, "out of memory");
    return *field != NULL;
}

static void set_time(reader *r, int64_t *field)
{
    if (!sqlq_xml_parse_http_date(sqlq_buf_str(&r->text), field))
        fail(r, SQLQ_E_PARSE, "a message time is not an RFC 1123 date");
}

static void end_message_field(reader *r, const char *name)
{
    sqlq_message *m = &r->msgs.items[r->msgs.count - 1];
    if (strcmp(name, "MessageId") == 0) {
        set_string(r, &m->id);
    } else if (strcmp(name, "PopReceipt") == 0) {
        set_string(r, &m->pop_receipt);
    } else if (strcmp(name, "MessageText") == 0) {
        if (set_string(r, &m->text))
            m->text_len = r->text.len;
    } else if (strcmp(name, "InsertionTime") == 0) {
        set_time(r, &m->insertion_time);
    } else if (strcmp(name, "ExpirationTime") == 0) {
        set_time(r, &m->expiration_time);
    } else if (strcmp(name, "TimeNextVisible") == 0) {
        set_time(r, &m->next_visible_time);
    } else if (strcmp(name, "DequeueCount") == 0) {
        const char *t = sqlq_buf_str(&r->text);
        char *end;
        errno = 0;
        long long v = strtoll(t, &end, 10);
        if (r->text.len == 0 || *end != '\0' || t[0] < '0' || t[0] > '9' || errno == ERANGE ||
            v > SQLQ_MESSAGE_MAX_DEQUEUE_COUNT)
            fail(r, SQLQ_E_PARSE, "DequeueCount is not a count in 0..2147483647");
        else
            m->dequeue_count = (long)v;
    }
}

static void add_queue_name(reader *r)
{
    if (r->nnames == r->names_cap) {
        size_t cap = r->names_cap ? r->names_cap * 2 : 16;
        char **names = realloc(r->names, cap * sizeof(*names));
        if (!names) {
            fail(r, SQLQ_E_NOMEM, "out of memory");
            return;
        }
        r->names = names;
        r->names_cap = cap;
    }
    r->names[r->nnames] = NULL;
    if (set_string(r, &r->names[r->nnames]))
        r->nnames++;
}

static void XMLCALL on_end(void *ctx, const XML_Char *name)
{
    reader *r = ctx;
    (void)name;
    if (r->failed != SQLQ_OK || r->depth == 0)
        return;
    const char *el = r->stack[r->depth - 1];
    if (el && r->depth >= 2) {
        if (r->kind == DOC_MESSAGES && r->depth == 3 && r->msgs.count > 0 &&
            r->stack[1] && strcmp(r->stack[1], "QueueMessage") == 0)
            end_message_field(r, el);
        else if (r->kind == DOC_QUEUES && at(r, "Queue", "Name") && r->depth == 4)
            add_queue_name(r);
        else if (r->kind == DOC_QUEUES && at(r, "EnumerationResults", "NextMarker") && r->text.len)
            set_string(r, &r->next_marker);
        else if (r->kind == DOC_ERROR && at(r, "Error", "Code"))
            set_string(r, &r->code);
        else if (r->kind == DOC_ERROR && at(r, "Error", "Message"))
            set_string(r, &r->message);
    }
    r->depth--;
    sqlq_buf_reset(&r->text);
}

static void XMLCALL on_doctype(void *ctx, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    fail(ctx, SQLQ_E_PARSE, "a DOCTYPE is not allowed");
}

static void reader_free(reader *r)
{
    sqlq_message_list_free(&r->msgs);
    for (size_t i = 0; i < r->nnames; i++)
        free(r->names[i]);
    free(r->names);
    free(r->next_marker);
    free(r->code);
    free(r->message);
    sqlq_buf_free(&r->text);
    if (r->parser)
        XML_ParserFree(r->parser);
}

/* Parses body as a document of the given kind; on failure the reader holds the reason. */
static sqlq_result run(reader *r, doc_kind kind, const char *body, size_t len, sqlq_error *err)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    sqlq_buf_init(&r->text, 1024 * 1024);
    r->parser = XML_ParserCreate("UTF-8");
    if (!r->parser)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot create an XML parser");
    XML_SetUserData(r->parser, r);
    XML_SetElementHandler(r->parser, on_start, on_end);
    XML_SetCharacterDataHandler(r->parser, on_text);
    XML_SetStartDoctypeDeclHandler(r->parser, on_doctype);
    if (len > (size_t)INT32_MAX)
        return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false, "XML body too large");
    enum XML_Status st = XML_Parse(r->parser, body ? body : "", (int)len, XML_TRUE);
    if (r->failed != SQLQ_OK)
        return sqlq_error_set(err, r->failed, false, "bad XML from the queue service (%s): %s",
                              root_names[kind], r->failure);
    if (st != XML_STATUS_OK)
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "malformed XML from the queue service (%s) at line %lu column %lu: %s",
                              root_names[kind], (unsigned long)XML_GetCurrentLineNumber(r->parser),
                              (unsigned long)XML_GetCurrentColumnNumber(r->parser),
                              XML_ErrorString(XML_GetErrorCode(r->parser)));
    return SQLQ_OK;
}

sqlq_result sqlq_xml_parse_messages(const char *body, size_t len, sqlq_message_list *out,
                                    sqlq_error *err)
{
    reader r;
    sqlq_result res = run(&r, DOC_MESSAGES, body, len, err);
    for (size_t i = 0; res == SQLQ_OK && i < r.msgs.count; i++) {
        const sqlq_message *m = &r.msgs.items[i];
        if (!m->id)
            res = sqlq_error_set(err, SQLQ_E_PARSE, false,
                                 "bad XML from the queue service: a message without MessageId");
        else if (!sqlq_message_ref_valid(m->id))
            res = sqlq_error_set(err, SQLQ_E_PARSE, false,
                                 "bad reply from the queue service: a MessageId of %zu bytes with "
                                 "characters a message id never has (allowed A-Z a-z 0-9 + / = - _, "
                                 "at most %d)",
                                 strlen(m->id), SQLQ_MESSAGE_REF_MAX);
        else if (m->pop_receipt && !sqlq_message_ref_valid(m->pop_receipt))
            res = sqlq_error_set(err, SQLQ_E_PARSE, false,
                                 "bad reply from the queue service: message %s has a PopReceipt of "
                                 "%zu bytes with characters a pop receipt never has",
                                 m->id, strlen(m->pop_receipt));
    }
    if (res == SQLQ_OK && r.msgs.count > 0) {
        sqlq_message *items = realloc(out->items, (out->count + r.msgs.count) * sizeof(*items));
        if (!items) {
            res = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        } else {
            memcpy(items + out->count, r.msgs.items, r.msgs.count * sizeof(*items));
            out->items = items;
            out->count += r.msgs.count;
            free(r.msgs.items); /* the fields moved to out */
            r.msgs.items = NULL;
            r.msgs.count = 0;
        }
    }
    reader_free(&r);
    return res;
}

sqlq_result sqlq_xml_parse_queue_list(const char *body, size_t len, char ***names, size_t *count,
                                      char **out_next_marker, sqlq_error *err)
{
    *out_next_marker = NULL;
    reader r;
    sqlq_result res = run(&r, DOC_QUEUES, body, len, err);
    if (res == SQLQ_OK && r.nnames > 0) {
        char **all = realloc(*names, (*count + r.nnames) * sizeof(*all));
        if (!all) {
            res = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        } else {
            memcpy(all + *count, r.names, r.nnames * sizeof(*all));
            *names = all;
            *count += r.nnames;
            r.nnames = 0;
        }
    }
    if (res == SQLQ_OK) {
        *out_next_marker = r.next_marker;
        r.next_marker = NULL;
    }
    reader_free(&r);
    return res;
}

static void copy_out(char *dst, size_t size, const char *src, size_t n)
{
    if (size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

sqlq_result sqlq_xml_parse_error(const char *body, size_t len, char *code, size_t code_size,
                                 char *message, size_t message_size)
{
    copy_out(code, code_size, "", 0);
    copy_out(message, message_size, "", 0);
    reader r;
    sqlq_result res = run(&r, DOC_ERROR, body, len, NULL);
    if (res == SQLQ_OK) {
        if (r.code)
            copy_out(code, code_size, r.code, strlen(r.code));
        if (r.message) /* the first line; RequestId and Time follow on their own lines */
            copy_out(message, message_size, r.message, strcspn(r.message, "\r\n"));
    }
    reader_free(&r);
    return res;
}

/* The characters a message's text cannot carry as they are (1), by byte value. */
static const unsigned char XML_SPECIAL[256] = {['&'] = 1, ['<'] = 1, ['>'] = 1, ['\r'] = 1};

sqlq_result sqlq_xml_escape(sqlq_buf *out, const char *text, size_t len)
{
    const unsigned char *u = (const unsigned char *)text;
    size_t run_start = 0;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < len; i++) {
        while (i < len && !XML_SPECIAL[u[i]])
            i++; /* a base64 text has none: one pass, no branch per kind */
        if (i == len)
            break;
        const char *rep;
        switch (text[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        default: rep = "&#xD;"; break;
        }
        r = sqlq_buf_add(out, text + run_start, i - run_start);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, rep);
        run_start = i + 1;
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_add(out, text + run_start, len - run_start);
    return r;
}

sqlq_result sqlq_xml_message_body(sqlq_buf *out, const char *text, size_t len)
{
    sqlq_result r = sqlq_buf_adds(out, "<QueueMessage><MessageText>");
    if (r == SQLQ_OK)
        r = sqlq_xml_escape(out, text, len);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, "</MessageText></QueueMessage>");
    return r;
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool sqlq_xml_parse_http_date(const char *s, int64_t *out)
{
    /* "Mon, 01 Jan 2024 00:00:00 GMT": fixed layout; month names are not locale-dependent here. */
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    if (!s || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' || strcmp(s + 26, "GMT") != 0)
        return false;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int year;
    const char *m = NULL;
    for (int i = 0; i < 12 && !m; i++)
        if (memcmp(months + 3 * i, s + 8, 3) == 0) {
            m = months + 3 * i;
            tm.tm_mon = i;
        }
    if (!m || !digits(s + 5, 2, &tm.tm_mday) || !digits(s + 12, 4, &year) ||
        !digits(s + 17, 2, &tm.tm_hour) || !digits(s + 20, 2, &tm.tm_min) ||
        !digits(s + 23, 2, &tm.tm_sec))
        return false;
    if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year = year - 1900;
    *out = (int64_t)timegm(&tm);
    return true;
}
