#include "console.h"

#include "console_assets.h"
#include "console_guard.h"
#include "console_internal.h"
#include "log.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Several pages refresh at once and an action may take its time: a few threads. */
#define THREADS 4u
#define CONNECTION_LIMIT 64u
#define CONNECTION_TIMEOUT_S 60u

/* ---- the listen address ---- */

/* "HOST:PORT" or "[V6]:PORT" into host (brackets removed) and port. */
static bool split_listen(const char *listen, char *host, size_t size, const char **port,
                         sqlq_error *err)
{
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    size_t hlen = colon ? (size_t)(colon - listen) : 0;
    if (!colon || hlen == 0 || hlen >= size || colon[1] == '\0') {
        sqlq_error_set(err, SQLQ_E_INVALID, false,
                       "console_listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:8470)",
                       listen ? listen : "");
        return false;
    }
    memcpy(host, listen, hlen);
    host[hlen] = '\0';
    if (host[0] == '[' && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    *port = colon + 1;
    return true;
}

static struct addrinfo *resolve(const char *listen, char *host, size_t size, sqlq_error *err)
{
    const char *port = NULL;
    if (!split_listen(listen, host, size, &port, err))
        return NULL;
    char *end;
    long p = strtol(port, &end, 10);
    if (*end != '\0' || p < 0 || p > 65535) {
        sqlq_error_set(err, SQLQ_E_INVALID, false, "console_listen: '%s': port must be 0..65535",
                       listen);
        return NULL;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        sqlq_error_set(err, SQLQ_E_INVALID, false, "console_listen: '%s': %s", listen,
                       rc ? gai_strerror(rc) : "no address");
        return NULL;
    }
    return res;
}

static bool addr_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET) {
        uint32_t ip = ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr);
        return (ip >> 24) == 127;
    }
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr);
    return false;
}

bool sqlq_console_listen_is_loopback(const char *listen, bool *out, sqlq_error *err)
{
    char host[256];
    struct addrinfo *res = resolve(listen, host, sizeof(host), err);
    if (!res)
        return false;
    *out = true; /* every address the name stands for must be loopback */
    for (struct addrinfo *a = res; a; a = a->ai_next)
        *out = *out && addr_loopback(a->ai_addr);
    freeaddrinfo(res);
    return true;
}

static sqlq_result open_listener(sqlq_console *c, int *out_fd, bool *v6, sqlq_error *err)
{
    char host[256];
    struct addrinfo *res = resolve(c->listen, host, sizeof(host), err);
    if (!res)
        return err->code;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    int rc = fd < 0 ? -1 : setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (rc == 0 && res->ai_family == AF_INET6)
        rc = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (rc == 0)
        rc = bind(fd, res->ai_addr, res->ai_addrlen);
    if (rc == 0)
        rc = listen(fd, 64);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    if (rc != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return sqlq_error_set(err, SQLQ_E_IO, false, "console_listen: cannot serve on %s: %s",
                              c->listen, strerror(e));
    }
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);
    if (getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        c->port = ntohs(a.ss_family == AF_INET6
                            ? ((const struct sockaddr_in6 *)(const void *)&a)->sin6_port
                            : ((const struct sockaddr_in *)(const void *)&a)->sin_port);
    snprintf(c->host, sizeof(c->host), *v6 ? "[%s]" : "%s", host);
    *out_fd = fd;
    return SQLQ_OK;
}

/* ---- replies ---- */

void console_reply_json(console_reply *r, unsigned status, json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(doc);
    if (!text) {
        console_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    free(r->body);
    r->status = status;
    r->type = "application/json; charset=utf-8";
    r->body = text;
    r->len = strlen(text);
}

void console_reply_error(console_reply *r, unsigned status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    vsnprintf(msg, sizeof(msg), fmt, ap);
#pragma GCC diagnostic pop
    va_end(ap);
    char *text = json_dumps(json_pack("{s:s}", "error", msg), JSON_COMPACT | JSON_ENSURE_ASCII);
    free(r->body);
    r->status = status;
    r->type = "application/json; charset=utf-8";
    r->body = text;
    r->len = text ? strlen(text) : 0;
}

json_t *console_error_json(const sqlq_error *err)
{
    char line[800];
    sqlq_error_format(err, line, sizeof(line));
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    json_t *s = NULL;
    if (sqlq_buf_adds(&b, line) == SQLQ_OK) {
        sqlq_log_redact(&b);
        s = json_stringn_nocheck(sqlq_buf_str(&b), b.len);
    }
    sqlq_buf_free(&b);
    return s ? s : json_string("error");
}

sqlq_result console_client(sqlq_console *c, sqlq_queue_client **out, sqlq_error *err)
{
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.encoding = c->cfg.encoding;
    o.clock = &c->clock; /* a stop request interrupts retries */
    o.timeout_ms = 30000;
    o.retry.max_delay_ms = 2000;
    o.retry.max_total_ms = 20000; /* the operator tools' budget (cli.h) */
    o.one_budget = true;
    return sqlq_queue_client_create(c->cfg.account, &o, out, err);
}

bool console_routed(const sqlq_console *c, const char *queue)
{
    for (size_t i = 0; queue && i < c->cfg.nroutes; i++)
        if (strcmp(c->routes[i].queue, queue) == 0)
            return true;
    return false;
}

/* ---- static files ---- */

static const char *content_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (dot && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (dot && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (dot && strcmp(dot, ".svg") == 0)
        return "image/svg+xml";
    return "application/octet-stream";
}

static bool serve_asset(const char *path, console_reply *r)
{
    for (const sqlq_console_asset *a = sqlq_console_assets; a->path; a++) {
        if (strcmp(a->path, path) != 0)
            continue;
        r->body = malloc(a->len ? a->len : 1);
        if (!r->body)
            return false;
        memcpy(r->body, a->data, a->len);
        r->len = a->len;
        r->status = MHD_HTTP_OK;
        r->type = content_type(path);
        return true;
    }
    return false;
}

static void redirect(console_reply *r, const char *to)
{
    r->status = MHD_HTTP_SEE_OTHER;
    r->location = to;
    r->type = "text/plain; charset=utf-8";
}

/* ---- requests ---- */

typedef struct request {
    sqlq_buf body;
    bool too_large;
} request;

/* The login form's token=… (application/x-www-form-urlencoded) checked against the token. */
static bool login_token_ok(const sqlq_console *c, const request *q)
{
    const char *b = sqlq_buf_str(&q->body);
    if (strncmp(b, "token=", 6) != 0)
        return false;
    sqlq_buf tok;
    sqlq_buf_init(&tok, 4096);
    bool ok = true;
    for (const char *p = b + 6; ok && *p && *p != '&'; p++) {
        char ch = *p == '+' ? ' ' : *p;
        if (*p == '%') {
            char hex[3] = {p[1], p[1] ? p[2] : '\0', '\0'};
            char *end;
            long v = strtol(hex, &end, 16);
            ok = *end == '\0' && end == hex + 2;
            ch = (char)v;
            p += ok ? 2 : 0;
        }
        ok = ok && sqlq_buf_addc(&tok, ch) == SQLQ_OK;
    }
    ok = ok && console_guard_token_ok(c, sqlq_buf_str(&tok), tok.len);
    sqlq_buf_free(&tok);
    return ok;
}

static void serve_login(sqlq_console *c, struct MHD_Connection *conn, const char *method,
                        const request *q, console_reply *r)
{
    if (!c->token) {
        redirect(r, "/");
        return;
    }
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
        serve_asset("/login.html", r);
        return;
    }
    const char *why = NULL;
    if (!console_guard_state_change(c, conn, false, &why)) {
        console_reply_error(r, MHD_HTTP_FORBIDDEN, "%s", why);
        return;
    }
    if (!login_token_ok(c, q)) {
        SQLQ_WARN("console.login_refused", "note=\"wrong token\"");
        redirect(r, "/login.html#refused");
        return;
    }
    snprintf(r->cookie, sizeof(r->cookie), "sqlq_console_session=%s; Path=/; HttpOnly; "
             "SameSite=Strict", c->session);
    redirect(r, "/");
}

static void serve_poison(sqlq_console *c, struct MHD_Connection *conn, console_reply *r)
{
    console_filter f = {
        .queue = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "queue"),
        .contains = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "contains"),
        .field = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "field"),
        .value = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "value"),
    };
    if (f.contains && !*f.contains)
        f.contains = NULL;
    if (f.field && !*f.field)
        f.field = NULL;
    console_api_poison(c, &f, r);
}

static void serve_get(sqlq_console *c, struct MHD_Connection *conn, const char *url,
                      console_reply *r)
{
    if (strcmp(url, "/api/session") == 0)
        console_api_session(c, r);
    else if (strcmp(url, "/api/routes") == 0)
        console_api_routes(c, r);
    else if (strcmp(url, "/api/queues") == 0)
        console_api_queues(c, r);
    else if (strcmp(url, "/api/poison") == 0)
        serve_poison(c, conn, r);
    else if (strcmp(url, "/metrics") == 0)
        console_api_metrics(c, r);
    else if (!serve_asset(strcmp(url, "/") == 0 ? "/index.html" : url, r))
        console_reply_error(r, MHD_HTTP_NOT_FOUND, "not found");
}

static void serve_post(sqlq_console *c, struct MHD_Connection *conn, const char *url,
                       const request *q, console_reply *r)
{
    const char *why = NULL;
    if (strncmp(url, "/api/poison/", 12) != 0) {
        console_reply_error(r, MHD_HTTP_NOT_FOUND, "not found");
    } else if (c->cfg.read_only) {
        console_reply_error(r, MHD_HTTP_FORBIDDEN,
                            "this console is read-only (--read-only): actions are refused");
    } else if (!console_guard_state_change(c, conn, true, &why)) {
        console_reply_error(r, MHD_HTTP_FORBIDDEN, "%s", why);
    } else if (q->too_large) {
        console_reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "request body over %d bytes",
                            CONSOLE_BODY_MAX);
    } else {
        console_action(c, url + 12, sqlq_buf_str(&q->body), q->body.len, r);
    }
}

/* Pages the login needs are served to anyone; the rest only with the token. */
static bool public_path(const char *url)
{
    return strcmp(url, "/login") == 0 || strcmp(url, "/login.html") == 0 ||
           strcmp(url, "/console.css") == 0 || strcmp(url, "/favicon.svg") == 0;
}

static void handle(sqlq_console *c, struct MHD_Connection *conn, const char *url,
                   const char *method, const request *q, console_reply *r)
{
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    if (!console_guard_host(c, conn))
        console_reply_error(r, MHD_HTTP_MISDIRECTED_REQUEST,
                            "the Host header does not name this console");
    else if (!get && !post)
        console_reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
    else if (strcmp(url, "/login") == 0)
        serve_login(c, conn, method, q, r);
    else if (!public_path(url) && !console_guard_authorized(c, conn)) {
        if (strncmp(url, "/api/", 5) == 0)
            console_reply_error(r, MHD_HTTP_UNAUTHORIZED, "the console's token is required");
        else
            redirect(r, "/login.html");
    } else if (get)
        serve_get(c, conn, url, r);
    else
        serve_post(c, conn, url, q, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    (void)version;
    sqlq_console *c = cls;
    request *q = *req_cls;
    if (!q) {
        q = calloc(1, sizeof(*q));
        if (!q)
            return MHD_NO;
        sqlq_buf_init(&q->body, CONSOLE_BODY_MAX);
        *req_cls = q;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!q->too_large && sqlq_buf_add(&q->body, upload_data, *upload_data_size) != SQLQ_OK)
            q->too_large = true;
        *upload_data_size = 0;
        return MHD_YES;
    }
    console_reply r;
    memset(&r, 0, sizeof(r));
    handle(c, conn, url, method, q, &r);
    SQLQ_DEBUG("console.request", "method=%s path=\"%.100s\" status=%u", method, url, r.status);
    return console_guard_send(conn, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    request *q = *req_cls;
    if (q) {
        sqlq_buf_free(&q->body);
        free(q);
    }
    *req_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    sqlq_console *c = cls;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
#pragma GCC diagnostic pop
    c->last_error[strcspn(c->last_error, "\r\n")] = '\0';
    SQLQ_WARN("console.http_error", "err=\"%s\"", c->last_error);
}

/* ---- start and stop ---- */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static sqlq_result copy_config(sqlq_console *c, const sqlq_console_config *cfg, sqlq_error *err)
{
    c->cfg = *cfg;
    c->listen = strdup(cfg->listen ? cfg->listen : "");
    c->token = dup_or_null(cfg->token);
    c->db_conn = dup_or_null(cfg->db);
    c->routes = calloc(cfg->nroutes + 1, sizeof(*c->routes));
    bool ok = c->listen && c->routes && (!cfg->token || !*cfg->token || c->token) &&
              (!cfg->db || !*cfg->db || c->db_conn);
    c->owned = calloc(3 * cfg->nroutes + 1, sizeof(*c->owned));
    ok = ok && c->owned;
    for (size_t i = 0; ok && i < cfg->nroutes; i++) {
        const sqlq_console_route *in = &cfg->routes[i];
        char **t = &c->owned[3 * i];
        ok = (t[0] = strdup(in->table)) && (t[1] = strdup(in->queue)) &&
             (t[2] = strdup(in->bridge ? in->bridge : "default"));
        c->routes[i] = (sqlq_console_route){t[0], t[1], t[2]};
    }
    c->cfg.routes = c->routes;
    c->cfg.token = c->token;
    c->cfg.db = c->db_conn;
    c->clock = sqlq_clock_system(cfg->stop);
    if (ok && (!console_guard_secret(c->csrf, CONSOLE_SECRET_HEX / 2) ||
               !console_guard_secret(c->session, CONSOLE_SECRET_HEX / 2)))
        return sqlq_error_set(err, SQLQ_E_IO, false, "console: no random bytes for its secrets");
    return ok ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static void console_free(sqlq_console *c)
{
    for (size_t i = 0; c->owned && i < 3 * c->cfg.nroutes; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->routes);
    free(c->listen);
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    free(c->db_conn);
    sqlq_status_report_destroy(c->report);
    sqlq_db_close(c->db);
    pthread_mutex_destroy(&c->db_lock);
    free(c);
}

sqlq_result sqlq_console_start(const sqlq_console_config *cfg, sqlq_console **out,
                               sqlq_error *err)
{
    *out = NULL;
    bool loopback = false;
    if (!sqlq_console_listen_is_loopback(cfg->listen, &loopback, err))
        return err->code;
    if (!loopback && (!cfg->token || !*cfg->token))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "console_listen: %s is not a loopback address: the console needs "
                              "a token there (console_token, SQLQ_CONSOLE_TOKEN or "
                              "SQLQ_CONSOLE_TOKEN_FILE); without one it serves only 127.0.0.1",
                              cfg->listen);
    sqlq_console *c = calloc(1, sizeof(*c));
    if (!c)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    pthread_mutex_init(&c->db_lock, NULL);
    c->loopback = loopback;
    sqlq_result r = copy_config(c, cfg, err);
    int fd = -1;
    bool v6 = false;
    if (r == SQLQ_OK)
        r = open_listener(c, &fd, &v6, err);
    if (r != SQLQ_OK) {
        console_free(c);
        return r;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                     (v6 ? MHD_USE_IPv6 : 0);
    c->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, c,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, c,
                                 MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_THREAD_POOL_SIZE, THREADS,
                                 MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT,
                                 MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
                                 MHD_OPTION_END);
    if (!c->daemon) {
        r = sqlq_error_set(err, SQLQ_E_IO, false, "console_listen: cannot serve on %s: %s",
                           c->listen, c->last_error[0] ? c->last_error : "libmicrohttpd failed");
        close(fd);
        console_free(c);
        return r;
    }
    SQLQ_INFO("console.started", "listen=%s port=%u token=%s read_only=%s routes=%zu",
              c->listen, (unsigned)c->port, c->token ? "required" : "none",
              c->cfg.read_only ? "true" : "false", c->cfg.nroutes);
    *out = c;
    return SQLQ_OK;
}

uint16_t sqlq_console_port(const sqlq_console *c)
{
    return c ? c->port : 0;
}

void sqlq_console_stop(sqlq_console *c)
{
    if (!c)
        return;
    MHD_stop_daemon(c->daemon);
    SQLQ_INFO("console.stopped", "port=%u", (unsigned)c->port);
    console_free(c);
}
