/*
 * fuzz_http: libFuzzer target for the HTTP request path, as the server runs
 * it on bytes from a client: the head parser (method, target, headers), the
 * path split and decode, the query, the route, the bearer token, and the
 * body (up to Content-Length) through the JSON parser and the sealing walk.
 * Anything may be refused; a crash, a sanitizer report or a broken invariant
 * (abort) is a bug. The invariants checked:
 *
 *   - a complete head is at most what was given, and a status is MORE, 0 or
 *     an HTTP error status;
 *   - a prefix of the input never parses further than the whole: if a prefix
 *     is a complete head, the whole is the same head;
 *   - a refused route is 404, 405 or 501; a split path has at most its
 *     maximum of segments, none empty, "." or "..", or holding '/' or NUL.
 *
 * The unit test fuzz_replay_http replays tests/api/corpus-http/ (seeded from
 * the strict-HTTP cases of issue 14) through it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_int.h"
#include "handlers.h"
#include "http.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_segments(char **seg, int n)
{
    if (n < 0 || n > CALL_MAX_SEGS)
        abort();
    for (int i = 0; i < n; i++)
        if (!seg[i][0] || strchr(seg[i], '/') || strcmp(seg[i], ".") == 0 ||
            strcmp(seg[i], "..") == 0)
            abort();
}

static void request_path(const struct api_http_head *h, const char *body, size_t body_len)
{
    struct call c;
    memset(&c, 0, sizeof(c));
    c.method = h->method;
    c.path = xstrdup(h->path);
    char why[160];
    if (api__http_split_path(h->path, &c.segbuf, c.seg, CALL_MAX_SEGS, &c.nseg, why) == 0) {
        check_segments(c.seg, c.nseg);
        if (api__route(&c) != 0 && c.status != 404 && c.status != 405 && c.status != 501)
            abort();
    }
    json_t *q = NULL;
    if (api__http_parse_query(h->query, &q, why) == 0 && !json_is_object(q))
        abort();
    json_decref(q);
    char token[128], id[17], secret[65];
    if (api__http_bearer(h->authorization, token, sizeof(token)) == 0)
        api_token_parse(token, id, secret);
    json_t *j = json_loadb(body, body_len, 0, NULL);
    if (json_is_object(j)) {
        static const unsigned char key[32] = {5};
        c.key = key;
        c.status = 0;
        static const struct api__place pl = {"provider", "p", "provisioner"};
        c.status = 0;
        api__refuse_sealed(&c, j);
        c.status = 0;
        api__seal(&c, j, NULL, json_object_get(j, "sensitive"), &pl, "body");
        api_redact(j);
    }
    json_decref(j);
    free(c.path);
    free(c.segbuf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    const char *buf = (const char *)data;
    struct api_http_head h;
    size_t used = 0;
    int rc = api__http_parse_head(buf, size, 4096, &h, &used);
    if (rc != 0 && rc != API_HTTP_MORE && (rc < 400 || rc > 505))
        abort();
    if (rc == 0 && (used > size || used == 0))
        abort();
    if (rc == 0) {
        size_t avail = size - used;
        size_t n = h.content_length >= 0 && (size_t)h.content_length < avail
                       ? (size_t)h.content_length
                       : avail;
        request_path(&h, buf + used, n);
    }
    /* A prefix parses no further than the whole. */
    if (size > 1) {
        size_t cut = size / 2;
        struct api_http_head hp;
        size_t used_p = 0;
        int rp = api__http_parse_head(buf, cut, 4096, &hp, &used_p);
        if (rp == 0 && (rc != 0 || used_p != used))
            abort();
        api__http_head_release(&hp);
    }
    api__http_head_release(&h);
    return 0;
}
