#include "shared_key.h"

#include "buf.h"

#include <ctype.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PAIRS 16

struct sqlq_shared_key {
    char *account;
    EVP_MAC *mac;
    EVP_MAC_CTX *ctx; /* keyed once; re-initialised with the same key for every signature */
    sqlq_buf text;    /* the string to sign, memory kept between requests */
};

void sqlq_shared_key_destroy(sqlq_shared_key *k)
{
    if (!k)
        return;
    EVP_MAC_CTX_free(k->ctx);
    EVP_MAC_free(k->mac);
    free(k->account);
    sqlq_buf_free(&k->text);
    free(k);
}

sqlq_result sqlq_shared_key_create(const char *account, const unsigned char *key, size_t key_len,
                                   sqlq_shared_key **out, sqlq_error *err)
{
    *out = NULL;
    if (!account || !*account || !key || key_len == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "SharedKey signing needs an account name and key");
    sqlq_shared_key *k = calloc(1, sizeof(*k));
    if (!k)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_buf_init(&k->text, 64 * 1024);
    k->account = strdup(account);
    k->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    k->ctx = k->mac ? EVP_MAC_CTX_new(k->mac) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (!k->account || !k->ctx || EVP_MAC_init(k->ctx, key, key_len, params) != 1) {
        sqlq_shared_key_destroy(k);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot set up HMAC-SHA256 (OpenSSL)");
    }
    *out = k;
    return SQLQ_OK;
}

const char *sqlq_shared_key_last_string(const sqlq_shared_key *k)
{
    return sqlq_buf_str(&k->text);
}

/* Order of pairs by case-insensitive name: tiny arrays, so insertion sort of indexes. */
static size_t sort_pairs(const sqlq_pair *p, size_t n, size_t idx[MAX_PAIRS])
{
    if (n > MAX_PAIRS)
        n = MAX_PAIRS;
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && strcasecmp(p[idx[j - 1]].name, p[i].name) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return n;
}

static sqlq_result add_lower(sqlq_buf *b, const char *s)
{
    sqlq_result r = SQLQ_OK;
    for (; r == SQLQ_OK && *s; s++)
        r = sqlq_buf_addc(b, (char)tolower((unsigned char)*s));
    return r;
}

static sqlq_result build_headers_part(sqlq_buf *b, const sqlq_sign_input *in)
{
    char length[24] = "";
    if (in->content_length > 0)
        snprintf(length, sizeof(length), "%zu", in->content_length);
    /* VERB, Content-Encoding, Content-Language, Content-Length, Content-MD5, Content-Type, Date,
     * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range. */
    sqlq_result r = sqlq_buf_printf(b, "%s\n\n\n%s\n\n%s\n\n\n\n\n\n\n", in->method, length,
                                    in->content_type ? in->content_type : "");
    size_t idx[MAX_PAIRS];
    size_t n = sort_pairs(in->ms_headers, in->nms_headers, idx);
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        const sqlq_pair *h = &in->ms_headers[idx[i]];
        r = add_lower(b, h->name);
        if (r == SQLQ_OK)
            r = sqlq_buf_printf(b, ":%s\n", h->value);
    }
    return r;
}

/* "/{account}{path}" then "\nname:value" per parameter sorted by lowercased name; the values of a
 * repeated name are joined with commas. */
static sqlq_result build_resource_part(sqlq_buf *b, const char *account, const sqlq_sign_input *in)
{
    sqlq_result r = sqlq_buf_printf(b, "/%s%s", account, in->path && *in->path ? in->path : "/");
    size_t idx[MAX_PAIRS];
    size_t n = sort_pairs(in->query, in->nquery, idx);
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        const sqlq_pair *q = &in->query[idx[i]];
        if (i > 0 && strcasecmp(in->query[idx[i - 1]].name, q->name) == 0) {
            r = sqlq_buf_printf(b, ",%s", q->value);
            continue;
        }
        r = sqlq_buf_addc(b, '\n');
        if (r == SQLQ_OK)
            r = add_lower(b, q->name);
        if (r == SQLQ_OK)
            r = sqlq_buf_printf(b, ":%s", q->value);
    }
    return r;
}

sqlq_result sqlq_shared_key_sign(sqlq_shared_key *k, const sqlq_sign_input *in, char *out,
                                 size_t out_size, sqlq_error *err)
{
    if (in->nquery > MAX_PAIRS || in->nms_headers > MAX_PAIRS)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "too many parameters to sign");
    sqlq_buf_reset(&k->text);
    sqlq_result r = build_headers_part(&k->text, in);
    if (r == SQLQ_OK)
        r = build_resource_part(&k->text, k->account, in);
    if (r != SQLQ_OK) {
        sqlq_buf_init(&k->text, 64 * 1024);
        return sqlq_error_set(err, r, false, "request too large to sign");
    }
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t mac_len = 0;
    if (EVP_MAC_init(k->ctx, NULL, 0, NULL) != 1 ||
        EVP_MAC_update(k->ctx, (const unsigned char *)k->text.data, k->text.len) != 1 ||
        EVP_MAC_final(k->ctx, mac, &mac_len, sizeof(mac)) != 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "HMAC-SHA256 failed (OpenSSL)");
    unsigned char sig[(EVP_MAX_MD_SIZE / 3 + 1) * 4 + 1];
    EVP_EncodeBlock(sig, mac, (int)mac_len);
    int n = snprintf(out, out_size, "SharedKey %s:%s", k->account, (const char *)sig);
    if (n < 0 || (size_t)n >= out_size)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "Authorization header buffer too small");
    return SQLQ_OK;
}
