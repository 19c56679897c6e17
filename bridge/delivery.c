/* delivery: one route's publishing side: turns polled changes into messages (envelope), puts
 * them with many requests in flight, sends exhausted or unsendable changes to {queue}-poison,
 * and says per change what happened so the route releases only what a queue accepted. */
#include "delivery.h"

#include "clock.h"
#include "log.h"
#include "shard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAILURE_MEMORY 256

/* The last permanent failure seen for a change, so its poison message can say why. */
typedef struct failure {
    char id[33];
    char reason[400];
} failure;

/* One queue of the shard set and what the delivery keeps for it. */
typedef struct lane {
    sqlq_delivery_lane l;
    char poison[64];
    unsigned long long accepted; /* changes its main queue accepted */
} lane;

struct sqlq_delivery {
    sqlq_delivery_config cfg;
    lane *lanes;
    size_t nlanes;
    failure memory[FAILURE_MEMORY];
    size_t next_memory;
    sqlq_delivery_counts counts;
    sqlq_delivery_fault fault; /* of the last round */
};

sqlq_outcome sqlq_delivery_classify(sqlq_result r, const sqlq_error *err)
{
    switch (r) {
    case SQLQ_OK:
        return SQLQ_OUTCOME_ACCEPTED;
    case SQLQ_E_CANCELLED:
    case SQLQ_E_TIMEOUT:
    case SQLQ_E_NOMEM:
    case SQLQ_E_INVALID: /* queue name or put options: every message alike */
        return SQLQ_OUTCOME_TRANSIENT;
    case SQLQ_E_TOO_LARGE:
    case SQLQ_E_BODY: /* this body refused before sending: counts like the service's refusal */
        if (!err || err->http_status == 0)
            return SQLQ_OUTCOME_FAILED;
        break;
    default:
        break;
    }
    if (!err)
        return r == SQLQ_E_NETWORK || r == SQLQ_E_NOT_FOUND ? SQLQ_OUTCOME_TRANSIENT : SQLQ_OUTCOME_FAILED;
    sqlq_fault_kind k = sqlq_fault_classify(err);
    return sqlq_fault_counts(k) ? SQLQ_OUTCOME_FAILED : SQLQ_OUTCOME_TRANSIENT;
}

void sqlq_delivery_fault_get(const sqlq_delivery *d, sqlq_delivery_fault *out)
{
    *out = d->fault;
}

void sqlq_delivery_fault_describe(const sqlq_delivery_fault *f, const char *sas, char *out, size_t size)
{
    sqlq_fault_context c = {f->op, f->queue, f->error.http_status, f->error.azure_code,
                            f->sas ? f->sas : sas, (int64_t)time(NULL), f->error.message};
    sqlq_fault_describe(f->kind, &c, out, size);
}

sqlq_result sqlq_delivery_create(sqlq_queue_client *client, const sqlq_delivery_config *cfg,
                                 sqlq_delivery **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_delivery *d = calloc(1, sizeof(*d));
    size_t n = cfg->nlanes ? cfg->nlanes : 1;
    lane *lanes = calloc(n, sizeof(*lanes));
    if (!d || !lanes) {
        free(d);
        free(lanes);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    d->cfg = *cfg;
    d->cfg.lanes = NULL;
    d->lanes = lanes;
    d->nlanes = n;
    for (size_t i = 0; i < n; i++) {
        lanes[i].l = cfg->nlanes ? cfg->lanes[i] : (sqlq_delivery_lane){cfg->queue, client, NULL};
        if (!sqlq_queue_poison_name(lanes[i].l.queue, lanes[i].poison, sizeof(lanes[i].poison))) {
            sqlq_result r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                                           "queue '%s' leaves no room for a poison queue "
                                           "({queue}-poison, at most 63 characters)",
                                           lanes[i].l.queue);
            sqlq_delivery_destroy(d);
            return r;
        }
    }
    *out = d;
    return SQLQ_OK;
}

void sqlq_delivery_destroy(sqlq_delivery *d)
{
    if (d)
        free(d->lanes);
    free(d);
}

size_t sqlq_delivery_lane_count(const sqlq_delivery *d)
{
    return d->nlanes;
}

const sqlq_delivery_lane *sqlq_delivery_lane_get(const sqlq_delivery *d, size_t i)
{
    return &d->lanes[i].l;
}

unsigned long long sqlq_delivery_lane_accepted(const sqlq_delivery *d, size_t i)
{
    return d->lanes[i].accepted;
}

void sqlq_delivery_counts_get(const sqlq_delivery *d, sqlq_delivery_counts *out)
{
    *out = d->counts;
}

static sqlq_result create_queue(sqlq_queue_client *client, const char *queue, sqlq_error *err)
{
    bool created = false;
    sqlq_result r = sqlq_queue_create(client, queue, &created, err);
    if (r == SQLQ_E_CONFLICT && err && !err->transient && strcmp(err->azure_code, "QueueAlreadyExists") == 0) {
        sqlq_error_clear(err); /* exists with other metadata: fine for us */
        r = SQLQ_OK;
    }
    if (r == SQLQ_OK && created)
        SQLQ_INFO("queue_created", "queue=%s", queue);
    return r;
}

sqlq_result sqlq_delivery_prepare_lane(sqlq_delivery *d, size_t i, sqlq_error *err)
{
    return create_queue(d->lanes[i].l.client, d->lanes[i].l.queue, err);
}

sqlq_result sqlq_delivery_prepare(sqlq_delivery *d, sqlq_error *err)
{
    return sqlq_delivery_prepare_lane(d, 0, err);
}

static void remember_failure(sqlq_delivery *d, const sqlq_change *ch, const sqlq_error *e)
{
    failure *f = &d->memory[d->next_memory++ % FAILURE_MEMORY];
    if (sqlq_envelope_id(d->cfg.envelope.bridge_name, d->cfg.envelope.table, ch->key, ch->version,
                         f->id, NULL) != SQLQ_OK)
        f->id[0] = '\0';
    sqlq_error_format(e, f->reason, sizeof(f->reason));
}

static void poison_reason(const sqlq_delivery *d, const sqlq_change *ch, char *out, size_t size)
{
    char id[33];
    if (sqlq_envelope_id(d->cfg.envelope.bridge_name, d->cfg.envelope.table, ch->key, ch->version,
                         id, NULL) == SQLQ_OK)
        for (size_t i = 0; i < FAILURE_MEMORY; i++)
            if (d->memory[i].id[0] && strcmp(d->memory[i].id, id) == 0) {
                snprintf(out, size, "publish failed %d times (max_attempts %d); last error: %s",
                         ch->attempts - 1, d->cfg.max_attempts, d->memory[i].reason);
                return;
            }
    snprintf(out, size,
             "not delivered after %d attempts (max_attempts %d): earlier deliveries failed or the "
             "instance holding it stopped before the queue accepted it",
             ch->attempts - 1, d->cfg.max_attempts);
}

/* A captured change as the message writer takes it, its row, changed columns and before
 * image cut to the route's columns (own: the new references to drop afterwards: row,
 * changed, before; false when out of memory). */
static bool as_message(const sqlq_delivery *d, const sqlq_change *c, sqlq_msg_change *out,
                       json_t *own[3])
{
    const sqlq_route_filter *f = d->cfg.filter;
    sqlq_op op = c->op;
    if (f)
        (void)sqlq_route_filter_decide(f, c->op, c->unmatched, &op);
    json_t *full = op == SQLQ_OP_DELETE ? NULL : c->row; /* an update out of --where: a delete */
    own[0] = f ? sqlq_route_filter_row(f, full, c->key) : json_incref(full);
    own[1] = f ? sqlq_route_filter_names(f, c->changed, c->key) : json_incref(c->changed);
    own[2] = f ? sqlq_route_filter_row(f, c->before, c->key) : json_incref(c->before);
    *out = (sqlq_msg_change){.op = op, .version = c->version, .key = c->key, .row = own[0],
                             .changed = own[1], .before = own[2]};
    return (own[0] || !full) && (own[1] || !c->changed) && (own[2] || !c->before);
}

/* Changes the route does not publish (--ops, --where): released without a message. */
static void filter_ops(sqlq_delivery *d, const sqlq_change *changes, size_t n, sqlq_outcome *outcomes)
{
    sqlq_op op;
    for (size_t i = 0; d->cfg.filter && i < n; i++)
        if ((outcomes[i] == SQLQ_OUTCOME_PENDING || outcomes[i] == SQLQ_OUTCOME_TRANSIENT) &&
            !sqlq_route_filter_decide(d->cfg.filter, changes[i].op, changes[i].unmatched, &op)) {
            outcomes[i] = SQLQ_OUTCOME_FILTERED;
            d->counts.filtered++;
        }
}

/* Messages for the changes of lane `ln` still to publish: main-queue messages (changes within
 * max_attempts) and poison messages (exhausted); indexes refer to changes[]. */
static sqlq_result build(sqlq_delivery *d, const sqlq_change *changes, size_t n,
                         const sqlq_outcome *outcomes, const size_t *lane_of, size_t ln,
                         sqlq_envelope_list *out, sqlq_error *err)
{
    int64_t ts = sqlq_clock_wall_ms();
    sqlq_msg_change *sub = malloc((n ? n : 1) * sizeof(*sub));
    size_t *map = malloc((n ? n : 1) * sizeof(*map));
    json_t *(*own)[3] = calloc(n ? n : 1, sizeof(*own));
    size_t m = 0;
    sqlq_result r = sub && map && own ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < n && r == SQLQ_OK; i++) {
        if ((outcomes[i] != SQLQ_OUTCOME_PENDING && outcomes[i] != SQLQ_OUTCOME_TRANSIENT) ||
            lane_of[i] != ln)
            continue;
        sqlq_msg_change mc;
        if (!as_message(d, &changes[i], &mc, own[i])) {
            r = sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
        } else if (changes[i].attempts > d->cfg.max_attempts) {
            char reason[700];
            poison_reason(d, &changes[i], reason, sizeof(reason));
            r = sqlq_envelope_add_poison(&d->cfg.envelope, &mc, i, reason, ts, out, err);
        } else {
            map[m] = i;
            sub[m++] = mc;
        }
    }
    size_t first = out->count;
    if (r == SQLQ_OK)
        r = sqlq_envelope_build(&d->cfg.envelope, sub, m, ts, out, err);
    for (size_t k = first; r == SQLQ_OK && k < out->count; k++)
        for (size_t j = 0; j < out->items[k].nchanges; j++)
            out->items[k].changes[j] = map[out->items[k].changes[j]];
    for (size_t i = 0; own && i < n; i++)
        for (size_t k = 0; k < 3; k++)
            json_decref(own[i][k]);
    free(own);
    free(sub);
    free(map);
    return r;
}

/* Every lane's messages, lane by lane; env_lane[k] says which lane message k goes to. */
static sqlq_result build_all(sqlq_delivery *d, const sqlq_change *changes, size_t n,
                             const sqlq_outcome *outcomes, sqlq_envelope_list *out,
                             size_t **env_lane, sqlq_error *err)
{
    size_t *lane_of = calloc(n ? n : 1, sizeof(*lane_of));
    sqlq_result r = lane_of ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < n && d->nlanes > 1; i++)
        if (!sqlq_shard_of(changes[i].key, d->nlanes, &lane_of[i]))
            r = sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    *env_lane = NULL;
    for (size_t ln = 0; r == SQLQ_OK && ln < d->nlanes; ln++) {
        size_t first = out->count;
        r = build(d, changes, n, outcomes, lane_of, ln, out, err);
        size_t *grown = r == SQLQ_OK ? realloc(*env_lane, (out->count ? out->count : 1) * sizeof(size_t)) : NULL;
        if (r == SQLQ_OK && !grown)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
        if (grown)
            *env_lane = grown;
        for (size_t k = first; grown && k < out->count; k++)
            grown[k] = ln;
    }
    free(lane_of);
    return r;
}

static bool queue_missing(const sqlq_put_item *it)
{
    return it->result == SQLQ_E_NOT_FOUND && strcmp(it->error.azure_code, "MessageNotFound") != 0;
}

/* Put `count` messages; a queue found missing is created (needs the create permission only
 * then) and its messages put once more. A refused create is what their error reports. */
static void put_batch(const sqlq_delivery *d, sqlq_queue_client *client, const char *queue,
                      sqlq_put_item *batch, size_t count, const sqlq_put_options *opt)
{
    /* Each item carries its own result; SQLQ_E_CANCELLED leaves the unfinished ones so. */
    sqlq_result pr = sqlq_queue_put_many(client, queue, batch, count, (size_t)d->cfg.max_in_flight, opt);
    (void)pr;
    size_t missing = 0;
    for (size_t k = 0; k < count; k++)
        missing += queue_missing(&batch[k]);
    if (missing == 0)
        return;
    sqlq_error qerr;
    sqlq_error_clear(&qerr);
    sqlq_result cr = create_queue(client, queue, &qerr);
    sqlq_put_item *again = calloc(missing, sizeof(*again));
    size_t n = 0;
    for (size_t k = 0; again && k < count; k++) {
        if (!queue_missing(&batch[k]))
            continue;
        if (cr != SQLQ_OK) { /* reported as the create's refusal, not as a missing queue */
            batch[k].result = cr;
            batch[k].error = qerr;
            continue;
        }
        again[n++] = (sqlq_put_item){batch[k].body, batch[k].len, SQLQ_E_CANCELLED, {0}};
    }
    if (n > 0)
        pr = sqlq_queue_put_many(client, queue, again, n, (size_t)d->cfg.max_in_flight, opt);
    for (size_t k = 0, j = 0; again && k < count && j < n; k++)
        if (queue_missing(&batch[k]))
            batch[k] = again[j++];
    free(again);
}

/* The puts of one lane: its poison messages, then its main-queue messages; results land in
 * items[] (each lane writes only its own messages' entries). */
typedef struct lane_job {
    const sqlq_delivery *d;
    const sqlq_envelope_list *l;
    const size_t *env_lane;
    size_t lane;
    sqlq_put_item *items;
    uint64_t t0_ms, end_ms; /* when the round's lanes started; when this lane ended */
    pthread_t thread;
    bool threaded;
} lane_job;

/* Put every message of one lane and destination. */
static void put_dest(const lane_job *j, sqlq_envelope_dest dest)
{
    const sqlq_envelope_list *l = j->l;
    const lane *ln = &j->d->lanes[j->lane];
    size_t count = 0;
    sqlq_put_item *batch = calloc(l->count ? l->count : 1, sizeof(*batch));
    size_t *where = calloc(l->count ? l->count : 1, sizeof(*where));
    if (!batch || !where) {
        free(batch);
        free(where);
        return; /* items keep SQLQ_E_NOMEM: transient */
    }
    for (size_t i = 0; i < l->count; i++)
        if (l->items[i].dest == dest && j->env_lane[i] == j->lane) {
            batch[count] = (sqlq_put_item){l->items[i].body, l->items[i].len, SQLQ_E_CANCELLED, {0}};
            where[count++] = i;
        }
    const char *queue = dest == SQLQ_DEST_MAIN ? ln->l.queue : ln->poison;
    /* Poison copies never expire: nobody may have looked at them yet. */
    sqlq_put_options opt = {dest == SQLQ_DEST_MAIN ? j->d->cfg.initial_visibility_s : 0,
                            dest == SQLQ_DEST_MAIN ? j->d->cfg.message_ttl_s : -1, false};
    if (count > 0)
        put_batch(j->d, ln->l.client, queue, batch, count, &opt);
    for (size_t k = 0; k < count; k++)
        j->items[where[k]] = batch[k];
    free(batch);
    free(where);
}

static void *put_lane(void *arg)
{
    lane_job *j = arg;
    put_dest(j, SQLQ_DEST_POISON);
    put_dest(j, SQLQ_DEST_MAIN);
    j->end_ms = sqlq_clock_mono_ms();
    return NULL;
}

/* The round's timeline, one debug line: each lane's messages and when it ended (ms from the
 * round's start). The round ends with its slowest lane: the others idle until then. */
static void log_lanes(const lane_job *jobs, const bool *busy, size_t nlanes)
{
    char n[256] = "", end[256] = "";
    size_t nl = 0, el = 0;
    for (size_t i = 0; i < nlanes; i++) {
        size_t count = 0;
        for (size_t k = 0; busy[i] && k < jobs[i].l->count; k++)
            count += jobs[i].env_lane[k] == i;
        unsigned long long ms = busy[i] ? (unsigned long long)(jobs[i].end_ms - jobs[i].t0_ms) : 0;
        int a = snprintf(n + nl, sizeof(n) - nl, "%s%zu", i ? "," : "", count);
        int b = snprintf(end + el, sizeof(end) - el, "%s%llu", i ? "," : "", ms);
        if (a < 0 || b < 0 || (size_t)a >= sizeof(n) - nl || (size_t)b >= sizeof(end) - el)
            break; /* more lanes than the line holds: the first ones */
        nl += (size_t)a;
        el += (size_t)b;
    }
    SQLQ_DEBUG("lanes_put", "queue=%s messages=%s end_ms=%s", jobs[0].d->lanes[0].l.queue, n, end);
}

/* Every lane with messages at once: lane 0 on this thread, the others on threads of their own
 * (a lane whose thread cannot start is put here, after the others). */
static void put_lanes(const sqlq_delivery *d, const sqlq_envelope_list *l, const size_t *env_lane,
                      sqlq_put_item *items)
{
    lane_job *jobs = calloc(d->nlanes, sizeof(*jobs));
    if (!jobs)
        return; /* items keep SQLQ_E_NOMEM: transient */
    bool *busy = calloc(d->nlanes, sizeof(*busy));
    for (size_t k = 0; busy && k < l->count; k++)
        busy[env_lane[k]] = true;
    uint64_t t0 = sqlq_clock_mono_ms();
    for (size_t i = 0; busy && i < d->nlanes; i++) {
        jobs[i] = (lane_job){d, l, env_lane, i, items, t0, t0, 0, false};
        if (i > 0 && busy[i])
            jobs[i].threaded = pthread_create(&jobs[i].thread, NULL, put_lane, &jobs[i]) == 0;
    }
    for (size_t i = 0; busy && i < d->nlanes; i++) {
        if (jobs[i].threaded)
            continue;
        if (busy[i])
            put_lane(&jobs[i]);
    }
    for (size_t i = 0; busy && i < d->nlanes; i++)
        if (jobs[i].threaded)
            pthread_join(jobs[i].thread, NULL);
    if (busy && d->nlanes > 1 && sqlq_log_enabled(SQLQ_LOG_DEBUG))
        log_lanes(jobs, busy, d->nlanes);
    free(busy);
    free(jobs);
}

static void log_failure(const sqlq_delivery *d, const lane *ln, const sqlq_envelope *e,
                        const sqlq_put_item *it, sqlq_outcome o)
{
    if (o == SQLQ_OUTCOME_TRANSIENT)
        SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "publish_retry", &it->error, "queue=%s table=%s changes=%zu", ln->l.queue,
                     d->cfg.envelope.table, e->nchanges);
    else
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "publish_failed", &it->error, "queue=%s table=%s changes=%zu dest=%s", ln->l.queue,
                     d->cfg.envelope.table, e->nchanges, e->dest == SQLQ_DEST_MAIN ? "main" : "poison");
}

/* The first service-wide fault of this round, for the outage report. */
static void note_fault(sqlq_delivery *d, const lane *ln, const sqlq_envelope *e, const sqlq_put_item *it)
{
    if (d->fault.any || it->result == SQLQ_E_CANCELLED)
        return;
    d->fault.any = true;
    d->fault.error = it->error;
    if (d->fault.error.code == SQLQ_OK)
        sqlq_error_set(&d->fault.error, it->result, true, "%s", sqlq_strerror(it->result));
    d->fault.kind = sqlq_fault_classify(&d->fault.error);
    bool create = strncmp(it->error.message, "create queue", 12) == 0;
    snprintf(d->fault.op, sizeof(d->fault.op), "%s", create ? "create queue" : "put message");
    snprintf(d->fault.queue, sizeof(d->fault.queue), "%s", e->dest == SQLQ_DEST_MAIN ? ln->l.queue : ln->poison);
    d->fault.sas = ln->l.sas;
}

static void record(sqlq_delivery *d, const sqlq_change *changes, const sqlq_envelope_list *l,
                   const size_t *env_lane, const sqlq_put_item *items, sqlq_outcome *outcomes)
{
    bool transient_seen = false;
    memset(&d->fault, 0, sizeof(d->fault));
    for (size_t i = 0; i < l->count; i++) {
        const sqlq_envelope *e = &l->items[i];
        lane *ln = &d->lanes[env_lane[i]];
        sqlq_outcome o = sqlq_delivery_classify(items[i].result, &items[i].error);
        if (o == SQLQ_OUTCOME_TRANSIENT)
            note_fault(d, ln, e, &items[i]);
        if (o == SQLQ_OUTCOME_ACCEPTED && e->dest == SQLQ_DEST_POISON)
            o = SQLQ_OUTCOME_POISONED;
        if (o == SQLQ_OUTCOME_ACCEPTED) {
            d->counts.messages++;
            ln->accepted += e->nchanges;
        }
        if (o == SQLQ_OUTCOME_POISONED)
            d->counts.poisoned += e->nchanges;
        if (o == SQLQ_OUTCOME_FAILED)
            d->counts.failed += e->nchanges;
        if (o == SQLQ_OUTCOME_TRANSIENT)
            transient_seen = true;
        if (o == SQLQ_OUTCOME_FAILED || o == SQLQ_OUTCOME_TRANSIENT)
            log_failure(d, ln, e, &items[i], o);
        for (size_t j = 0; j < e->nchanges; j++) {
            outcomes[e->changes[j]] = o;
            if (o == SQLQ_OUTCOME_FAILED)
                remember_failure(d, &changes[e->changes[j]], &items[i].error);
            if (o == SQLQ_OUTCOME_POISONED)
                /* attempts counts this lease too: the failed ones are one fewer, as the
                 * poison reason says ("publish failed 5 times (max_attempts 5)") */
                SQLQ_WARN("change_poisoned", "queue=%s table=%s version=%lld failed_attempts=%d",
                          ln->poison, d->cfg.envelope.table, (long long)changes[e->changes[j]].version,
                          changes[e->changes[j]].attempts - 1);
        }
    }
    if (transient_seen)
        d->counts.transient++;
}

sqlq_result sqlq_delivery_publish(sqlq_delivery *d, const sqlq_change *changes, size_t n,
                                  sqlq_outcome *outcomes, sqlq_error *err)
{
    sqlq_envelope_list l = {0};
    size_t *env_lane = NULL;
    filter_ops(d, changes, n, outcomes);
    sqlq_result r = build_all(d, changes, n, outcomes, &l, &env_lane, err);
    sqlq_put_item *items = r == SQLQ_OK ? calloc(l.count ? l.count : 1, sizeof(*items)) : NULL;
    if (r == SQLQ_OK && !items)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    if (r != SQLQ_OK) {
        free(env_lane);
        sqlq_envelope_list_free(&l);
        return r;
    }
    for (size_t i = 0; i < l.count; i++)
        items[i].result = SQLQ_E_NOMEM;
    if (l.count > 0)
        put_lanes(d, &l, env_lane, items);
    record(d, changes, &l, env_lane, items, outcomes);
    free(items);
    free(env_lane);
    sqlq_envelope_list_free(&l);
    return SQLQ_OK;
}
