#include "console_guard.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* No inline script or style, nothing from elsewhere, no framing, forms only to this console. */
#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                   \
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
#define COOKIE_NAME "sqlq_console_session"

bool console_guard_secret(char *buf, size_t n)
{
    unsigned char raw[64];
    if (n > sizeof(raw) || RAND_bytes(raw, (int)n) != 1)
        return false;
    for (size_t i = 0; i < n; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    OPENSSL_cleanse(raw, sizeof(raw));
    return true;
}

static bool same_text(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    return alen == blen && CRYPTO_memcmp(a, b, blen) == 0;
}

bool console_guard_host(const sqlq_console *c, struct MHD_Connection *conn)
{
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host)
        return false;
    char want[300];
    snprintf(want, sizeof(want), "%s:%u", c->host, (unsigned)c->port);
    if (strcasecmp(host, want) == 0)
        return true;
    if (!c->loopback)
        return false;
    static const char *const local[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
        snprintf(want, sizeof(want), "%s:%u", local[i], (unsigned)c->port);
        if (strcasecmp(host, want) == 0)
            return true;
    }
    return false;
}

/* The value of the session cookie in a Cookie header (name=value; name=value). */
static bool cookie_ok(const sqlq_console *c, const char *cookies)
{
    size_t name_len = strlen(COOKIE_NAME);
    for (const char *p = cookies; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > name_len && strncmp(p, COOKIE_NAME "=", name_len + 1) == 0 &&
            same_text(p + name_len + 1, len - name_len - 1, c->session))
            return true;
        p = end;
    }
    return false;
}

bool console_guard_authorized(const sqlq_console *c, struct MHD_Connection *conn)
{
    if (!c->token)
        return true;
    const char *auth =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0 &&
        console_guard_token_ok(c, auth + 7, strlen(auth + 7)))
        return true;
    const char *cookies =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_COOKIE);
    return cookie_ok(c, cookies);
}

bool console_guard_token_ok(const sqlq_console *c, const char *given, size_t len)
{
    return c->token && given && same_text(given, len, c->token);
}

bool console_guard_state_change(const sqlq_console *c, struct MHD_Connection *conn,
                                bool need_csrf, const char **why)
{
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    char want[320];
    snprintf(want, sizeof(want), "http://%s", host ? host : "");
    if (!origin || !host || strcasecmp(origin, want) != 0) {
        *why = "cross-origin request refused: the Origin header must be this console's own";
        return false;
    }
    const char *csrf = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Sqlq-Csrf");
    if (need_csrf && (!csrf || !same_text(csrf, strlen(csrf), c->csrf))) {
        *why = "missing or wrong anti-CSRF token (X-Sqlq-Csrf): reload the page";
        return false;
    }
    return true;
}

static enum MHD_Result add(struct MHD_Response *resp, const char *name, const char *value)
{
    return value ? MHD_add_response_header(resp, name, value) : MHD_YES;
}

enum MHD_Result console_guard_send(struct MHD_Connection *conn, console_reply *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"",
                                        r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(r->body);
        r->body = NULL;
        return MHD_NO;
    }
    r->body = NULL; /* libmicrohttpd frees it */
    enum MHD_Result ok = add(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
    if (ok == MHD_YES)
        ok = add(resp, "Content-Security-Policy", CSP);
    if (ok == MHD_YES)
        ok = add(resp, "X-Content-Type-Options", "nosniff");
    if (ok == MHD_YES)
        ok = add(resp, "X-Frame-Options", "DENY");
    if (ok == MHD_YES)
        ok = add(resp, "Referrer-Policy", "same-origin"); /* no-referrer makes form posts send Origin: null */
    if (ok == MHD_YES)
        ok = add(resp, "Cross-Origin-Opener-Policy", "same-origin");
    if (ok == MHD_YES)
        ok = add(resp, "Cross-Origin-Resource-Policy", "same-origin");
    if (ok == MHD_YES)
        ok = add(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (ok == MHD_YES)
        ok = add(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, r->disposition);
    if (ok == MHD_YES)
        ok = add(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    if (ok == MHD_YES)
        ok = add(resp, MHD_HTTP_HEADER_SET_COOKIE, r->cookie[0] ? r->cookie : NULL);
    if (ok == MHD_YES)
        ok = MHD_queue_response(conn, r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}
