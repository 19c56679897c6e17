#include "libcurl.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_status = CURLE_FAILED_INIT;

static void global_init(void)
{
    global_status = curl_global_init(CURL_GLOBAL_DEFAULT);
}

sqlq_result sqlq_libcurl_init(sqlq_error *err)
{
    pthread_once(&global_once, global_init);
    if (global_status != CURLE_OK)
        return sqlq_error_set(err, SQLQ_E_NETWORK, false, "libcurl could not initialise: %s",
                              curl_easy_strerror(global_status));
    return SQLQ_OK;
}
