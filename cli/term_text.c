#include "term_text.h"

#include <stdio.h>
#include <string.h>

size_t sqlq_term_text_utf8_len(const unsigned char *s, size_t len)
{
    if (len == 0)
        return 0;
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    unsigned cp = c & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* The code point of a valid sequence of n bytes. */
static unsigned code_point(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0];
    unsigned cp = s[0] & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++)
        cp = (cp << 6) | (s[i] & 0x3Fu);
    return cp;
}

/* The escape for the character at s (n bytes, 0 = an invalid byte) into esc, or "" when it is
 * safe to print as it is. */
static void escape_of(const unsigned char *s, size_t n, bool multiline, char *esc, size_t size)
{
    esc[0] = '\0';
    if (n == 0) {
        snprintf(esc, size, "\\x%02x", s[0]);
        return;
    }
    unsigned cp = code_point(s, n);
    if (multiline && (cp == '\n' || cp == '\t'))
        return;
    if (cp == '\\') /* escaped too, so "\\x1b" in a body cannot pass for an escaped ESC */
        snprintf(esc, size, "\\\\");
    else if (cp < 0x20 || cp == 0x7F)
        snprintf(esc, size, "\\x%02x", cp);
    else if (cp >= 0x80 && cp <= 0x9F)
        snprintf(esc, size, "\\u%04x", cp);
}

sqlq_result sqlq_term_text_escape(const char *s, size_t len, bool multiline, sqlq_buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < len;) {
        size_t n = sqlq_term_text_utf8_len(p + i, len - i);
        char esc[12];
        escape_of(p + i, n, multiline, esc, sizeof(esc));
        r = esc[0] ? sqlq_buf_adds(out, esc) : sqlq_buf_add(out, p + i, n);
        i += n ? n : 1;
    }
    return r;
}

/* Combining marks and joiners belong to the character before them: never cut before one. */
static bool is_combining(unsigned cp)
{
    return (cp >= 0x300 && cp <= 0x36F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
           (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x20D0 && cp <= 0x20FF) || cp == 0x200D ||
           (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xFE20 && cp <= 0xFE2F) ||
           (cp >= 0x1F3FB && cp <= 0x1F3FF) || (cp >= 0xE0100 && cp <= 0xE01EF);
}

typedef struct piece {
    char text[16];
    size_t len;     /* bytes of text */
    size_t width;   /* characters it shows as */
    bool combining; /* glued to the character before */
    bool space;
} piece;

static piece next_piece(const unsigned char *s, size_t len, size_t *used)
{
    piece pc = {{0}, 0, 1, false, false};
    size_t n = sqlq_term_text_utf8_len(s, len);
    *used = n ? n : 1;
    unsigned cp = n ? code_point(s, n) : 0xFFFFFFFFu;
    if (n && (cp == ' ' || cp == '\n' || cp == '\t' || cp == '\r')) {
        pc.text[0] = ' ';
        pc.len = 1;
        pc.space = true;
        return pc;
    }
    escape_of(s, n, false, pc.text, sizeof(pc.text));
    if (pc.text[0]) {
        pc.len = strlen(pc.text);
        pc.width = pc.len;
        return pc;
    }
    memcpy(pc.text, s, n);
    pc.len = n;
    pc.combining = is_combining(cp);
    pc.width = pc.combining ? 0 : 1;
    return pc;
}

void sqlq_term_text_preview(const char *s, size_t len, size_t width, char *out, size_t out_size)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, shown = 0, keep = 0; /* keep: bytes of out up to the last safe cut */
    bool cut = false, last_space = true;
    size_t room = width > 3 ? width - 3 : width; /* leave room for "..." */
    for (size_t i = 0; i < len && !cut;) {
        size_t used;
        piece pc = next_piece(p + i, len - i, &used);
        i += used;
        if (pc.space && last_space)
            continue; /* runs of whitespace (and leading whitespace) show as one space */
        last_space = pc.space;
        if (!pc.combining && shown <= room)
            keep = o; /* a cut before this character is safe and leaves room for "..." */
        if (shown + pc.width > width || o + pc.len + 4 > out_size) {
            cut = true;
            break;
        }
        memcpy(out + o, pc.text, pc.len);
        o += pc.len;
        shown += pc.width;
    }
    if (cut) {
        /* Back to the last character boundary that leaves room for "...", never splitting a
         * character from its combining marks. */
        o = keep;
        while (o > 0 && out[o - 1] == ' ')
            o--;
        memcpy(out + o, "...", 3);
        o += 3;
    }
    while (!cut && o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

sqlq_result sqlq_term_text_json(const char *json, sqlq_buf *out)
{
    const unsigned char *p = (const unsigned char *)json;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && p[i];) {
        char esc[8];
        if (p[i] == 0x7F) {
            r = sqlq_buf_adds(out, "\\u007f");
            i++;
        } else if (p[i] == 0xC2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) {
            snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)p[i + 1]);
            r = sqlq_buf_adds(out, esc);
            i += 2;
        } else {
            r = sqlq_buf_addc(out, (char)p[i]);
            i++;
        }
    }
    return r;
}

void sqlq_term_text_line(const char *s, char *out, size_t out_size)
{
    if (out_size == 0)
        return;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t n = 0;
    if (sqlq_term_text_escape(s, strlen(s), false, &b) == SQLQ_OK) {
        const unsigned char *p = (const unsigned char *)sqlq_buf_str(&b);
        for (size_t k; p[n] && (k = sqlq_term_text_utf8_len(p + n, b.len - n)) > 0 &&
                       n + k < out_size;)
            n += k;
        memcpy(out, p, n);
    }
    out[n] = '\0';
    sqlq_buf_free(&b);
}

const char *sqlq_term_text_name(const char *s, char *out, size_t out_size)
{
    sqlq_term_text_line(s ? s : "", out, out_size);
    return out;
}
