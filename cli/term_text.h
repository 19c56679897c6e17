/* term_text: bytes from messages made safe to print on a terminal. C0 and C1 controls, DEL
 * and bytes that are not UTF-8 become visible escapes (\x1b, \u009b), and a backslash is
 * written \\ so that no text can pass for an escape, so a poison message
 * cannot clear the screen, fake output or set the clipboard; previews are cut on a
 * character boundary. */
#ifndef SQLQ_TERM_TEXT_H
#define SQLQ_TERM_TEXT_H

#include "buf.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>

/* Append s[0..len) to out with every control escaped. multiline keeps '\n' and '\t' as they
 * are (for `show`); otherwise they are escaped too. */
SQLQ_NODISCARD sqlq_result sqlq_term_text_escape(const char *s, size_t len, bool multiline,
                                                 sqlq_buf *out);

/* s on one line, controls escaped, into out (cut on a character boundary when it does not
 * fit): for error texts that carry what a queue service said. */
void sqlq_term_text_line(const char *s, char *out, size_t out_size);

/* A name from outside (a table, bridge, index, instance or queue name; from the database, a
 * config file or the command line) as one printf argument: sqlq_term_text_line into out, so
 * ESC, BEL, CR and newline in it are shown escaped; NULL prints as "". Returns out. */
#define SQLQ_TERM_NAME_MAX 1024
const char *sqlq_term_text_name(const char *s, char *out, size_t out_size);

/* One line of at most width characters (code points) of s, controls escaped, whitespace runs
 * shown as one space, cut on a character boundary (never before a combining mark), "..." when
 * cut. out is NUL-terminated; out_size should be at least 4 * width + 1. */
void sqlq_term_text_preview(const char *s, size_t len, size_t width, char *out, size_t out_size);

/* A JSON text (jansson's output) with DEL and C1 controls, which JSON allows raw, written as
 * \u escapes: the same JSON value, safe on a terminal. Appended to out. */
SQLQ_NODISCARD sqlq_result sqlq_term_text_json(const char *json, sqlq_buf *out);

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when s[0..len) does not start
 * with one (overlong forms, surrogates and values over U+10FFFF are not valid). */
size_t sqlq_term_text_utf8_len(const unsigned char *s, size_t len);

#endif
