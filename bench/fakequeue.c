/* fakequeue: a queue service that costs next to nothing, for bench/latency.py --queue fake.
 *
 * In-memory Azurite is one Node thread that spends 0.4-0.9 ms of CPU per Put Message on the
 * benchmark machine: at 1,000 puts/s it is at or near a full core, so a latency measured
 * through it is mostly its queueing. This server answers the queue API's few calls the bridge
 * and the benchmark make, from one thread (libmicrohttpd, epoll), in microseconds:
 *
 *   POST   …/messages             store the <MessageText>, 201 with a QueueMessagesList
 *   GET    …/messages             Get Messages (numofmessages, peekonly): messages not yet
 *                                 taken, oldest first (taken ones stay, invisible, as a
 *                                 visibility timeout would keep them)
 *   DELETE …/messages             Clear Messages, 204
 *   GET/HEAD …?comp=metadata      200, x-ms-approximate-messages-count (taken ones included)
 *   PUT    /{account}/{queue}     Create Queue, 201; DELETE: 204; anything else 200, empty
 *
 * One queue: the queue name is not looked at. No authentication: any signature passes. It is
 * not the queue service (no visibility timeouts, no TTL, no errors); it lets the benchmark
 * see what the bridge adds when the queue service is not the bottleneck.
 *
 *   fakequeue PORT [MIN_MS-MAX_MS]   (prints "listening PORT" when ready; stops on SIGTERM/SIGINT)
 *
 * With MIN_MS-MAX_MS every request is answered after a delay drawn uniformly from that range,
 * as a queue service a region away would answer (bench/scale.py: 20-30 ms); requests are then
 * served a thread per connection, so delays overlap as they would on the network.
 *
 * Built by bench/setup.sh (cc -O2 fakequeue.c -lmicrohttpd), not by the product build. */
#include <microhttpd.h>

#include <pthread.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BODY (1u << 20)

typedef struct {
    char *text;
    size_t len;
} message;

static struct {
    message *m;
    size_t n, cap, taken; /* taken: messages [0, taken) were handed out by Get Messages */
    unsigned long long ids;
} q;

typedef struct {
    char *body;
    size_t len;
} upload;

static volatile sig_atomic_t stop_now;
static unsigned delay_lo_ms, delay_hi_ms; /* 0-0: answer at once */
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
}

static const char *XML_HEAD = "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList>";
static const char *DATES = "<InsertionTime>Mon, 01 Jan 2024 00:00:00 GMT</InsertionTime>"
                           "<ExpirationTime>Fri, 31 Dec 9999 23:59:59 GMT</ExpirationTime>";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body, size_t len,
                             long long count)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "x-ms-request-id", "fake");
    MHD_add_response_header(r, "x-ms-version", "2019-12-12");
    if (len)
        MHD_add_response_header(r, "Content-Type", "application/xml");
    if (count >= 0) {
        char v[32];
        snprintf(v, sizeof(v), "%lld", count);
        MHD_add_response_header(r, "x-ms-approximate-messages-count", v);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static enum MHD_Result put_message(struct MHD_Connection *c, const upload *u)
{
    const char *open = u->body ? strstr(u->body, "<MessageText>") : NULL;
    const char *close = open ? strstr(open, "</MessageText>") : NULL;
    if (!open || !close)
        return reply(c, 400, "", 0, -1);
    open += strlen("<MessageText>");
    if (q.n == q.cap) {
        size_t cap = q.cap ? q.cap * 2 : 4096;
        message *m = realloc(q.m, cap * sizeof(*m));
        if (!m)
            return reply(c, 500, "", 0, -1);
        q.m = m;
        q.cap = cap;
    }
    message *m = &q.m[q.n];
    m->len = (size_t)(close - open);
    m->text = malloc(m->len + 1);
    if (!m->text)
        return reply(c, 500, "", 0, -1);
    memcpy(m->text, open, m->len);
    m->text[m->len] = '\0';
    q.n++;
    char out[512];
    int n = snprintf(out, sizeof(out),
                     "%s<QueueMessage><MessageId>fake-%llu</MessageId>%s<PopReceipt>pr</PopReceipt>"
                     "<TimeNextVisible>Mon, 01 Jan 2024 00:00:00 GMT</TimeNextVisible>"
                     "</QueueMessage></QueueMessagesList>",
                     XML_HEAD, ++q.ids, DATES);
    return reply(c, 201, out, (size_t)n, -1);
}

static enum MHD_Result get_messages(struct MHD_Connection *c)
{
    const char *num = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "numofmessages");
    const char *peek = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "peekonly");
    size_t want = num ? (size_t)strtoul(num, NULL, 10) : 1;
    if (want < 1)
        want = 1;
    if (want > 32)
        want = 32;
    bool peekonly = peek && strcmp(peek, "true") == 0;
    size_t size = 256;
    for (size_t i = q.taken; i < q.n && i < q.taken + want; i++)
        size += q.m[i].len + 512;
    char *out = malloc(size);
    if (!out)
        return reply(c, 500, "", 0, -1);
    size_t len = (size_t)snprintf(out, size, "%s", XML_HEAD);
    size_t i = q.taken;
    for (; i < q.n && i < q.taken + want; i++)
        len += (size_t)snprintf(out + len, size - len,
                                "<QueueMessage><MessageId>fake-m%zu</MessageId>%s%s"
                                "<TimeNextVisible>Mon, 01 Jan 2024 00:00:00 GMT</TimeNextVisible>"
                                "<DequeueCount>1</DequeueCount><MessageText>%s</MessageText>"
                                "</QueueMessage>",
                                i, DATES, peekonly ? "" : "<PopReceipt>pr</PopReceipt>", q.m[i].text);
    len += (size_t)snprintf(out + len, size - len, "</QueueMessagesList>");
    if (!peekonly)
        q.taken = i;
    enum MHD_Result r = reply(c, 200, out, len, -1);
    free(out);
    return r;
}

static void clear_messages(void)
{
    for (size_t i = 0; i < q.n; i++)
        free(q.m[i].text);
    q.n = q.taken = 0;
}

static enum MHD_Result answer(struct MHD_Connection *c, const char *url, const char *method, upload *u);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    (void)cls;
    (void)version;
    upload *u = *con_cls;
    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*data_size > 0) {
        if (u->len + *data_size > MAX_BODY)
            return MHD_NO;
        char *b = realloc(u->body, u->len + *data_size + 1);
        if (!b)
            return MHD_NO;
        memcpy(b + u->len, data, *data_size);
        u->body = b;
        u->len += *data_size;
        u->body[u->len] = '\0';
        *data_size = 0;
        return MHD_YES;
    }
    if (delay_hi_ms > 0) {
        static _Thread_local unsigned seed;
        if (!seed)
            seed = (unsigned)(uintptr_t)&seed ^ (unsigned)time(NULL);
        unsigned ms = delay_lo_ms + (unsigned)rand_r(&seed) % (delay_hi_ms - delay_lo_ms + 1);
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&q_mu);
    enum MHD_Result res = answer(c, url, method, u);
    pthread_mutex_unlock(&q_mu);
    return res;
}

static enum MHD_Result answer(struct MHD_Connection *c, const char *url, const char *method, upload *u)
{
    const char *comp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "comp");
    bool messages = ends_with(url, "/messages");
    if (strcmp(method, "POST") == 0 && messages)
        return put_message(c, u);
    if (strcmp(method, "GET") == 0 && messages)
        return get_messages(c);
    if (strcmp(method, "DELETE") == 0 && messages) {
        clear_messages();
        return reply(c, 204, "", 0, -1);
    }
    if (comp && strcmp(comp, "metadata") == 0)
        return reply(c, 200, "", 0, (long long)q.n);
    if (strcmp(method, "PUT") == 0)
        return reply(c, 201, "", 0, -1);
    if (strcmp(method, "DELETE") == 0) {
        clear_messages();
        return reply(c, 204, "", 0, -1);
    }
    if (comp && strcmp(comp, "list") == 0) {
        static const char list[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults>"
                                   "<Queues /></EnumerationResults>";
        return reply(c, 200, list, sizeof(list) - 1, -1);
    }
    return reply(c, 200, "", 0, -1);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    upload *u = *con_cls;
    if (u) {
        free(u->body);
        free(u);
    }
    *con_cls = NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && sscanf(argv[2], "%u-%u", &delay_lo_ms, &delay_hi_ms) == 2 &&
                       delay_lo_ms <= delay_hi_ms)) {
        fprintf(stderr, "usage: fakequeue PORT [MIN_MS-MAX_MS]\n");
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    struct sockaddr_in addr; /* loopback only */
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        delay_hi_ms ? MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
                    : MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO,
        (uint16_t)port, NULL, NULL, on_request, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
        NULL, MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_CONNECTION_LIMIT, 1000u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "fakequeue: cannot listen on port %u\n", port);
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("listening %u\n", port);
    fflush(stdout);
    while (!stop_now)
        pause();
    MHD_stop_daemon(d);
    clear_messages();
    free(q.m);
    return 0;
}
