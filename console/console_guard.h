/* console_guard: who may use the console and how a reply leaves it: the Host a browser must
 * name (no DNS rebinding), the token (a session cookie after /login, or a bearer header), the
 * Origin and anti-CSRF token every state change carries, and the headers every reply gets
 * (a strict Content-Security-Policy, nosniff, no framing, no caching). */
#ifndef SQLQ_CONSOLE_GUARD_H
#define SQLQ_CONSOLE_GUARD_H

#include "console_internal.h"

#include <microhttpd.h>

/* Fill buf with n random bytes as hex (2n + 1 bytes). False when the system has no entropy. */
bool console_guard_secret(char *buf, size_t n);

/* Whether the Host header names this console (its listen address, or on loopback also
 * localhost / 127.0.0.1 / [::1], each with the port). */
bool console_guard_host(const sqlq_console *c, struct MHD_Connection *conn);
/* Whether the request carries the token: the session cookie or Authorization: Bearer. True
 * when the console has no token. */
bool console_guard_authorized(const sqlq_console *c, struct MHD_Connection *conn);
/* Whether the token given (the login form's) is the console's, compared in constant time. */
bool console_guard_token_ok(const sqlq_console *c, const char *given, size_t len);
/* A state change: Origin must be this console's own ("http://" + Host) and X-Sqlq-Csrf the
 * anti-CSRF token. False with a reason (for the 403) otherwise. */
bool console_guard_state_change(const sqlq_console *c, struct MHD_Connection *conn,
                                bool need_csrf, const char **why);

/* Queue r with the headers every reply carries. */
enum MHD_Result console_guard_send(struct MHD_Connection *conn, console_reply *r);

#endif
