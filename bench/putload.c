/* putload: the minimal Put Message load generator behind bench/ceiling.sh.
 *
 * POSTs the same prepared body N times to one URL (a queue's /messages URL carrying a SAS, so
 * nothing is signed per request) with K requests in flight over K kept-alive connections
 * (libcurl multi), and prints one JSON line: requests, ok (201), seconds, per_second, and the
 * p50/p99 request latency in milliseconds. It parses nothing but the status code.
 *
 *   putload URL BODY_FILE N K [HEADER_FILE]
 *
 * HEADER_FILE adds request headers, one per line: a SharedKey Authorization computed once
 * (every request is identical, so one signature fits all) gives a ceiling for signed requests
 * without signing per request.
 *
 * Built by bench/setup.sh (cc -O2 putload.c -lcurl), not by the product build. */
#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_K 256

typedef struct {
    CURL *h;
    double started;
} slot;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long parse_count(const char *s, long max)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return (end && *end == '\0' && v >= 1 && v <= max) ? v : -1;
}

static char *read_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = (long)n;
    return buf;
}

static void start(CURLM *m, slot *s, const char *url, const char *body, long len,
                  struct curl_slist *hdrs)
{
    curl_easy_setopt(s->h, CURLOPT_URL, url);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE, len);
    curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
    s->started = now_s();
    curl_multi_add_handle(m, s->h);
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: putload URL BODY_FILE N K [HEADER_FILE]\n");
        return 2;
    }
    long len = 0, n = parse_count(argv[3], 100000000L), k = parse_count(argv[4], MAX_K);
    char *body = read_file(argv[2], &len);
    if (!body || n < 0 || k < 0) {
        fprintf(stderr, "putload: bad body file, N or K (1..%d)\n", MAX_K);
        return 2;
    }
    double *lat = malloc((size_t)n * sizeof(*lat));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, k);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/xml");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (argc == 6) {
        long hlen = 0;
        char *extra = read_file(argv[5], &hlen);
        for (char *line = extra ? strtok(extra, "\r\n") : NULL; line; line = strtok(NULL, "\r\n"))
            hdrs = curl_slist_append(hdrs, line); /* libcurl copies the string */
        free(extra);
    }
    slot slots[MAX_K];
    long sent = 0, done = 0, ok = 0, last_bad = -1;
    CURLcode last_err = CURLE_OK;
    double t0 = now_s();
    for (long i = 0; i < k && sent < n; i++, sent++) {
        slots[i].h = curl_easy_init();
        start(m, &slots[i], argv[1], body, len, hdrs);
    }
    while (done < n) {
        int running = 0, q = 0, added = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &q))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            slot *s = NULL;
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            lat[done++] = now_s() - s->started;
            ok += status == 201;
            if (status != 201) { /* said at the end: a failed run names its cause */
                last_bad = status;
                last_err = msg->data.result;
            }
            curl_multi_remove_handle(m, s->h);
            if (sent < n) {
                sent++;
                added++;
                start(m, s, argv[1], body, len, hdrs);
            }
        }
        if (done < n && !added) /* a new request goes out at once, without a wait */
            curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    double secs = now_s() - t0;
    qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
    printf("{\"requests\":%ld,\"ok\":%ld,\"seconds\":%.4f,\"per_second\":%.1f,"
           "\"p50_ms\":%.2f,\"p99_ms\":%.2f}\n",
           n, ok, secs, (double)n / secs, lat[n / 2] * 1e3, lat[(n * 99) / 100] * 1e3);
    for (long i = 0; i < k && i < n; i++)
        curl_easy_cleanup(slots[i].h);
    curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    free(lat);
    free(body);
    if (ok != n)
        fprintf(stderr, "putload: %ld of %ld puts failed; the last: HTTP status %ld (0: none), %s\n",
                n - ok, n, last_bad, curl_easy_strerror(last_err));
    return ok == n ? 0 : 1;
}
