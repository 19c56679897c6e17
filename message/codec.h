/* codec: message text encoding (base64 as Azure Functions expects, or plain) and its limit. */
#ifndef SQLQ_CODEC_H
#define SQLQ_CODEC_H

#include "buf.h"
#include "result.h"

/* The service limit on MessageText as sent (after encoding), in bytes. */
#define SQLQ_MESSAGE_MAX_TEXT 65536u

typedef enum { SQLQ_ENCODING_BASE64 = 0, SQLQ_ENCODING_PLAIN = 1 } sqlq_encoding;

bool sqlq_encoding_parse(const char *name, sqlq_encoding *out); /* "base64" | "plain" */
const char *sqlq_encoding_name(sqlq_encoding e);

/* Appends the encoded text to out. SQLQ_E_TOO_LARGE (with sizes in err) when the result would
 * exceed SQLQ_MESSAGE_MAX_TEXT; SQLQ_E_BODY for plain text that is not valid UTF-8 or holds
 * characters XML 1.0 cannot carry (a refusal of this body alone: nothing was sent). */
SQLQ_NODISCARD sqlq_result sqlq_codec_encode(sqlq_encoding e, const void *body, size_t len,
                                             sqlq_buf *out, sqlq_error *err);
/* Appends the decoded bytes to out; SQLQ_E_PARSE when base64 text is not valid base64. */
SQLQ_NODISCARD sqlq_result sqlq_codec_decode(sqlq_encoding e, const char *text, size_t len,
                                             sqlq_buf *out, sqlq_error *err);
/* False when e cannot carry body[0..len) whatever its size: plain text that sqlq_codec_encode
 * refuses with SQLQ_E_BODY. Base64 carries any bytes. */
bool sqlq_codec_carries(sqlq_encoding e, const void *body, size_t len);
/* Size the encoded form of len bytes would have. */
size_t sqlq_codec_encoded_size(sqlq_encoding e, size_t len);

#endif
