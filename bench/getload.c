/* getload: the minimal get+delete client behind bench/consumer.py's ceiling, as putload is
 * for puts.
 *
 * K loops over K kept-alive connections (libcurl multi) against one queue URL carrying a SAS
 * (nothing signed per request): Get Messages (32 at a time), then Delete Message for each one
 * received, then get again, until N messages were deleted. It reads only MessageId and
 * PopReceipt from the answer and does nothing with the message text. Prints one JSON line:
 * messages (deleted), gets, empty_gets, seconds, per_second.
 *
 *   getload QUEUE_URL_WITH_SAS N K
 *
 * Built by bench/setup.sh (cc -O2 getload.c -lcurl), not by the product build. */
#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_K 64
#define PER_GET 32

typedef struct {
    CURL *h;
    char *body;
    size_t len, cap;
    char ids[PER_GET][64];
    char pops[PER_GET][256];
    int count, next;
    int deleting; /* the request in flight is a delete */
} slot;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
    slot *s = ctx;
    size_t add = size * n;
    if (s->len + add + 1 > s->cap) {
        size_t cap = (s->len + add + 1) * 2;
        char *b = realloc(s->body, cap);
        if (!b)
            return 0;
        s->body = b;
        s->cap = cap;
    }
    memcpy(s->body + s->len, p, add);
    s->len += add;
    s->body[s->len] = '\0';
    return add;
}

static long parse_count(const char *s, long max)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return (end && *end == '\0' && v >= 1 && v <= max) ? v : -1;
}

/* The text of the next <tag>…</tag> at or after *from into out; 0 when there is none. */
static int element(const char **from, const char *tag, char *out, size_t size)
{
    char open[32], close[32];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = strstr(*from, open);
    const char *b = a ? strstr(a, close) : NULL;
    if (!a || !b)
        return 0;
    a += strlen(open);
    size_t n = (size_t)(b - a);
    if (n >= size)
        return 0;
    memcpy(out, a, n);
    out[n] = '\0';
    *from = b + strlen(close);
    return 1;
}

static void parse_messages(slot *s)
{
    const char *p = s->body ? s->body : "";
    s->count = s->next = 0;
    while (s->count < PER_GET && element(&p, "MessageId", s->ids[s->count], sizeof(s->ids[0])) &&
           element(&p, "PopReceipt", s->pops[s->count], sizeof(s->pops[0])))
        s->count++;
}

static void start(CURLM *m, slot *s, const char *url)
{
    s->len = 0;
    curl_easy_setopt(s->h, CURLOPT_URL, url);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
    curl_multi_add_handle(m, s->h);
}

static void start_get(CURLM *m, slot *s, const char *base, const char *sas)
{
    char url[4096];
    snprintf(url, sizeof(url), "%s/messages?numofmessages=%d&visibilitytimeout=60&%s", base,
             PER_GET, sas);
    s->deleting = 0;
    curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(s->h, CURLOPT_HTTPGET, 1L);
    start(m, s, url);
}

static void start_delete(CURLM *m, slot *s, const char *base, const char *sas)
{
    char *pop = curl_easy_escape(s->h, s->pops[s->next], 0);
    char url[4096];
    snprintf(url, sizeof(url), "%s/messages/%s?popreceipt=%s&%s", base, s->ids[s->next],
             pop ? pop : "", sas);
    curl_free(pop);
    s->next++;
    s->deleting = 1;
    curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, "DELETE");
    start(m, s, url);
}

int main(int argc, char **argv)
{
    long n = argc == 4 ? parse_count(argv[2], 100000000L) : -1;
    long k = argc == 4 ? parse_count(argv[3], MAX_K) : -1;
    char *base = argc == 4 ? strdup(argv[1]) : NULL;
    char *q = base ? strchr(base, '?') : NULL;
    if (n < 0 || k < 0 || !q) {
        fprintf(stderr, "usage: getload QUEUE_URL_WITH_SAS N K (K 1..%d)\n", MAX_K);
        return 2;
    }
    *q = '\0';
    const char *sas = q + 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, k);
    slot slots[MAX_K];
    memset(slots, 0, sizeof(slots));
    long received = 0, deleted = 0, gets = 0, empty = 0, failed = 0, active = 0;
    double t0 = now_s();
    for (long i = 0; i < k; i++, active++) {
        slots[i].h = curl_easy_init();
        start_get(m, &slots[i], base, sas);
    }
    while (active > 0) {
        int running = 0, left = 0, started = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            slot *s = NULL;
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(m, s->h);
            if (s->deleting) {
                deleted += status == 204;
                if (status != 204)
                    fprintf(stderr, "getload: delete answered %ld\n", status);
                failed += status != 204;
            } else {
                gets++;
                parse_messages(s);
                received += s->count;
                empty += s->count == 0;
                failed += status != 200;
            }
            started++;
            if (s->next < s->count)
                start_delete(m, s, base, sas);
            else if (received < n && failed == 0 && now_s() - t0 < 600)
                start_get(m, s, base, sas);
            else
                active--, started--;
        }
        if (active > 0 && !started) /* a new request goes out at once, without a wait */
            curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    double secs = now_s() - t0;
    printf("{\"messages\":%ld,\"received\":%ld,\"gets\":%ld,\"empty_gets\":%ld,\"failed\":%ld,"
           "\"seconds\":%.4f,\"per_second\":%.1f}\n",
           deleted, received, gets, empty, failed, secs, (double)deleted / secs);
    for (long i = 0; i < k; i++) {
        curl_easy_cleanup(slots[i].h);
        free(slots[i].body);
    }
    curl_multi_cleanup(m);
    curl_global_cleanup();
    free(base);
    return deleted >= n && failed == 0 ? 0 : 1;
}
