/*
 * hex: bytes to hex digits and back, in one place (token ids and secrets,
 * salts, the secrets key file, digests for ETags and revisions).
 *
 * Encoding writes lowercase digits. Decoding takes either case and checks
 * every character with isxdigit: a sign, a space or "0x" is refused, never
 * read as sscanf("%2x") would read it.
 *
 * Errors: hex_decode returns 0 or DRV_EINVAL (error.h). Ownership: the
 * caller provides every buffer. Threads: no state; any thread.
 */
#ifndef DROVER_HEX_H
#define DROVER_HEX_H

#include <stddef.h>

/* Write the 2 * n lowercase hex digits of data[0..n) and a NUL to out (2 * n + 1 bytes). */
void hex_encode(const void *data, size_t n, char *out);

/*
 * Decode the NUL-terminated hex digits s into out, which has room for max
 * bytes; *n gets the number of bytes. DRV_EINVAL when s has an odd length,
 * a character that is not a hex digit, or more than max bytes; out is then
 * untouched or partly written, and *n is unchanged. "" decodes to 0 bytes.
 */
int hex_decode(const char *s, unsigned char *out, size_t max, size_t *n);

#endif
