/* shard: which of a route's N queues a change goes to: a stable hash of its key. */
#include "shard.h"

#include "envelope.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

uint64_t sqlq_shard_hash(const char *canonical_key, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (EVP_Digest(canonical_key, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8)
        abort(); /* SHA-256 over memory we hold cannot fail but for a broken library */
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = (h << 8) | md[i];
    return h;
}

bool sqlq_shard_of(const json_t *key, size_t n, size_t *out)
{
    *out = 0;
    if (n <= 1)
        return true;
    char *canon = sqlq_envelope_canonical_key(key);
    if (!canon)
        return false;
    *out = (size_t)(sqlq_shard_hash(canon, strlen(canon)) % n);
    free(canon);
    return true;
}
