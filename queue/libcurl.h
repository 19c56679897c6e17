/* libcurl: libcurl's process-wide set-up (curl_global_init), done once for every user of
 * libcurl in sqlq: the queue transport (http.c) and the consumer's HTTP handler. */
#ifndef SQLQ_LIBCURL_H
#define SQLQ_LIBCURL_H

#include "result.h"

/* The first call initialises libcurl (thread safe: later and concurrent calls wait for it and
 * get its outcome); never undone, the process exit cleans up. */
SQLQ_NODISCARD sqlq_result sqlq_libcurl_init(sqlq_error *err);

#endif
