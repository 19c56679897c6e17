#include "log_once.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct sqlq_log_once {
    pthread_mutex_t mu;
    size_t n;
    char *texts[SQLQ_LOG_ONCE_MAX];
};

sqlq_log_once *sqlq_log_once_create(void)
{
    sqlq_log_once *s = calloc(1, sizeof(*s));
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

void sqlq_log_once_destroy(sqlq_log_once *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->texts[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

bool sqlq_log_once_first(sqlq_log_once *s, const char *text)
{
    if (!s)
        return true;
    bool first = true;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n && first; i++)
        first = strcmp(s->texts[i], text) != 0;
    if (first && s->n < SQLQ_LOG_ONCE_MAX) {
        s->texts[s->n] = strdup(text);
        if (s->texts[s->n])
            s->n++;
    }
    pthread_mutex_unlock(&s->mu);
    return first;
}
