#include "http_server.h"

#include "buf.h"
#include "log.h"

#include <microhttpd.h>

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Probes must get through while others hold connections open: many connections in all, few
 * per client address, and idle ones closed soon (a probe sends its request at once). */
#define CONNECTION_LIMIT 512u
#define PER_IP_LIMIT 16u
#define CONNECTION_TIMEOUT_S 3u
#define LISTEN_BACKLOG 128
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"

struct sqlq_http_server {
    struct MHD_Daemon *daemon;
    sqlq_metrics *metrics;
    sqlq_readiness_fn ready;
    void *ready_ctx;
    uint16_t port;
    char last_error[256]; /* libmicrohttpd's last complaint, for start-up failures */
};

/* libmicrohttpd logs through this: into the sqlq log, and kept for the start-up error. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    sqlq_http_server *s = cls;
    char line[256];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    vsnprintf(line, sizeof(line), fmt, ap);
#pragma GCC diagnostic pop
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    memcpy(s->last_error, line, n + 1);
    SQLQ_WARN("http_server_error", "err=\"%s\"", line);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len)
{
    /* body is malloc'd and handed over: libmicrohttpd frees it with free(). */
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (ok == MHD_YES)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (ok == MHD_YES && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (ok == MHD_YES)
        ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    char *body = strdup(text);
    return body ? reply(c, status, TEXT_CONTENT_TYPE, body, strlen(body)) : MHD_NO;
}

static enum MHD_Result serve_readyz(sqlq_http_server *s, struct MHD_Connection *c,
                                    unsigned *status)
{
    char reason[600] = "";
    bool ok = !s->ready || s->ready(s->ready_ctx, reason, sizeof(reason));
    if (ok) {
        *status = MHD_HTTP_OK;
        return reply_text(c, *status, "ready\n");
    }
    reason[sizeof(reason) - 1] = '\0';
    char text[sizeof(reason) + 16];
    snprintf(text, sizeof(text), "not ready: %s\n", reason[0] ? reason : "unknown");
    *status = MHD_HTTP_SERVICE_UNAVAILABLE;
    return reply_text(c, *status, text);
}

static enum MHD_Result serve_metrics(sqlq_http_server *s, struct MHD_Connection *c,
                                     unsigned *status)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_metrics_render(s->metrics, &b);
    if (r != SQLQ_OK) {
        sqlq_buf_free(&b);
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        return reply_text(c, *status, "metrics could not be rendered\n");
    }
    size_t len;
    char *body = sqlq_buf_take(&b, &len);
    if (!body)
        return MHD_NO;
    *status = MHD_HTTP_OK;
    return reply(c, *status, METRICS_CONTENT_TYPE, body, len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    sqlq_http_server *s = cls;
    unsigned status = MHD_HTTP_NOT_FOUND;
    enum MHD_Result ok;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        ok = reply_text(c, status, "method not allowed\n");
    } else if (strcmp(url, "/healthz") == 0) {
        status = MHD_HTTP_OK;
        ok = reply_text(c, status, "ok\n");
    } else if (strcmp(url, "/readyz") == 0) {
        ok = serve_readyz(s, c, &status);
    } else if (strcmp(url, "/metrics") == 0) {
        ok = serve_metrics(s, c, &status);
    } else {
        ok = reply_text(c, status, "not found: try /healthz, /readyz or /metrics\n");
    }
    SQLQ_DEBUG("http_request", "method=%s path=\"%.100s\" status=%u", method, url, status);
    return ok;
}

/* Split "host:port", "[v6]:port" or ":port" and resolve it. */
static sqlq_result parse_listen(const char *listen, struct sockaddr_storage *out,
                                socklen_t *out_len, sqlq_error *err)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    size_t hlen = colon ? (size_t)(colon - listen) : 0;
    if (!colon || hlen >= sizeof(host))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:9464)", listen);
    memcpy(host, listen, hlen);
    host[hlen] = '\0';
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    } else if (strchr(host, ':') || strchr(host, '[') || strchr(host, ']')) {
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "listen: '%s': write an IPv6 address in brackets, [::1]:9464",
                              listen);
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "listen: '%s': port must be 0..65535", listen);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = host[0] ? AF_UNSPEC : AF_INET;
    int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
    if (rc != 0 || !res)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "listen: '%s': %s", listen,
                              rc ? gai_strerror(rc) : "no address");
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *out_len = res->ai_addrlen;
    freeaddrinfo(res);
    return SQLQ_OK;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return 0;
    if (a.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)(const void *)&a)->sin6_port);
    return ntohs(((const struct sockaddr_in *)(const void *)&a)->sin_port);
}

/* The listening socket, bound here so that a failure names the address and the reason
 * (libmicrohttpd's own message said "port 0" for an address given as a sockaddr). */
static sqlq_result open_listener(const char *listen_at, const struct sockaddr_storage *addr,
                                 socklen_t addr_len, int *out_fd, sqlq_error *err)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sqlq_error_set(err, SQLQ_E_IO, false, "listen: cannot serve on %s: socket: %s",
                              listen_at, strerror(errno));
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    const char *step = "bind";
    int rc = bind(fd, (const struct sockaddr *)addr, addr_len);
    if (rc == 0) {
        step = "listen";
        rc = listen(fd, LISTEN_BACKLOG);
    }
    if (rc != 0) {
        int e = errno;
        close(fd);
        return sqlq_error_set(err, SQLQ_E_IO, false, "listen: cannot serve on %s: %s: %s",
                              listen_at, step, strerror(e));
    }
    *out_fd = fd;
    return SQLQ_OK;
}

sqlq_result sqlq_http_server_start(const char *listen, sqlq_metrics *metrics,
                                   sqlq_readiness_fn ready, void *ready_ctx,
                                   sqlq_http_server **out, sqlq_error *err)
{
    *out = NULL;
    if (!listen || !*listen)
        return SQLQ_OK;
    struct sockaddr_storage addr;
    socklen_t addr_len = 0;
    sqlq_result r = parse_listen(listen, &addr, &addr_len, err);
    if (r != SQLQ_OK)
        return r;
    int fd = -1;
    r = open_listener(listen, &addr, addr_len, &fd, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    s->metrics = metrics;
    s->ready = ready;
    s->ready_ctx = ready_ctx;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* The logger must be the first option or earlier complaints go to stderr directly. */
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                                 MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, PER_IP_LIMIT,
                                 MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        r = sqlq_error_set(err, SQLQ_E_IO, false, "listen: cannot serve on %s: %s", listen,
                           s->last_error[0] ? s->last_error : "libmicrohttpd failed to start");
        close(fd);
        free(s);
        return r;
    }
    s->port = bound_port(fd); /* the daemon owns fd now and closes it when stopped */
    SQLQ_INFO("http_server_started", "listen=%s port=%u", listen, (unsigned)s->port);
    *out = s;
    return SQLQ_OK;
}

uint16_t sqlq_http_server_port(const sqlq_http_server *s)
{
    return s ? s->port : 0;
}

void sqlq_http_server_stop(sqlq_http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    SQLQ_INFO("http_server_stopped", "port=%u", (unsigned)s->port);
    free(s);
}
