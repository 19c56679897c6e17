/* shard_set: the queues one route or consumer works on, written as one name ("orders"), a
 * name and a count ("orders" with 4 shards: orders-0 … orders-3) or a list ("a,b,c"); each
 * entry may name the storage account it lives in ("west:orders-2"). */
#ifndef SQLQ_SHARD_SET_H
#define SQLQ_SHARD_SET_H

#include "result.h"

#include <stddef.h>

#define SQLQ_SHARDS_MAX 256

typedef struct sqlq_shard_set {
    char **queues;   /* count names, each a valid queue name with room for {queue}-poison */
    char **accounts; /* count entries: the account name given with "account:queue", else NULL */
    size_t count;
} sqlq_shard_set;

/* spec: one queue name, or a comma-separated list of [account:]queue; shards: 0 or 1 = spec as
 * it is, 2..SQLQ_SHARDS_MAX = spec is one [account:]name and the set is name-0 … name-(N-1).
 * accounts (optional, n_accounts > 0 only with shards >= 2): shard i lives in
 * accounts[i % n_accounts]. Every rejected value is named with what is allowed. */
SQLQ_NODISCARD sqlq_result sqlq_shard_set_parse(const char *spec, long long shards,
                                                const char *const *accounts, size_t n_accounts,
                                                sqlq_shard_set *out, sqlq_error *err);
void sqlq_shard_set_free(sqlq_shard_set *s);

#endif
