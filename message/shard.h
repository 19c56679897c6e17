/* shard: which of a route's N queues a change goes to: a stable hash of its key, the same on
 * every instance and in every language (docs/scaling.md). */
#ifndef SQLQ_SHARD_H
#define SQLQ_SHARD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first 8 bytes of SHA-256 over the key's canonical JSON (sqlq_envelope_canonical_key:
 * sorted keys, no whitespace, UTF-8), read as a big-endian unsigned 64-bit integer. */
uint64_t sqlq_shard_hash(const char *canonical_key, size_t len);

/* The shard of a key among n (n >= 1): sqlq_shard_hash(canonical key) mod n. false only when
 * out of memory (the key cannot be serialised). */
bool sqlq_shard_of(const json_t *key, size_t n, size_t *out);

#endif
