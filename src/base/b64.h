/*
 * b64.h — base64 encoding (internal; decoding is the public
 * rein_base64_decode in rein.h).
 *
 * MCP carries binary (chars_b64 input, raw output ranges) as base64 strings;
 * the encoder is the exact inverse of rein_base64_decode: standard alphabet
 * (RFC 4648 section 4), '=' padding, no line breaks.
 */
#ifndef REIN_BASE_B64_H
#define REIN_BASE_B64_H

#include <stddef.h>

#include "base/buf.h"

/* The encoded length of n bytes, or 0 when it would overflow size_t (only
 * n == 0 also gives 0). */
size_t b64_encoded_len(size_t n);

/* Appends the base64 of data[0..n) to out (data may be NULL when n is 0).
 * 0, or -ENOMEM (out unchanged). */
int b64_encode(const void *data, size_t n, buf_t *out);

#endif
