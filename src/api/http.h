/*
 * http: the API's HTTP/1.1 request parser. Not public (src/api only).
 *
 * Pure functions on bytes, safe on any thread, no allocation that outlives
 * the struct they fill: the server (server.c) feeds them what a connection
 * received, and the fuzz target feeds them anything. They are strict on
 * purpose (docs/api.md "HTTP"), because a lenient parser behind a proxy that
 * reads the same bytes differently is a request-smuggling hole:
 *
 *   - request line "METHOD SP /target SP HTTP/1.x" CRLF; origin-form
 *     targets only; lines end in CRLF (a bare LF or CR is refused);
 *   - header names are tokens, values visible characters, SP and HTAB:
 *     any other control character (NUL included) is refused, and so is
 *     a folded line;
 *   - at most one Content-Length (digits only), one Host, one
 *     Authorization; HTTP/1.1 needs Host; Transfer-Encoding is not
 *     implemented (501), and with Content-Length it is refused (400);
 *   - a path is split at '/' and each segment percent-decoded: bad escapes,
 *     an encoded NUL or '/', control characters and the segments "." and
 *     ".." are refused; a query is decoded the same way, its keys once each.
 *
 * Errors: functions return 0, or an HTTP status (400, 413, 414, 417, 431,
 * 501, 505) with a lowercase message in the struct's `error`; the head
 * parser also returns API_HTTP_MORE while the head is incomplete.
 */
#ifndef DROVER_API_HTTP_H
#define DROVER_API_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define API_HTTP_MORE 1 /* the head is not complete yet: read more */

#define API_HTTP_MAX_HEADERS 100 /* header lines; more is 431 */
#define API_HTTP_MAX_TARGET 8192 /* request target; longer is 414 */
#define API_HTTP_MAX_SEGS 8      /* path segments; deeper paths do not exist (404) */

enum api_http_method {
    API_M_UNKNOWN = 0, /* a token we do not know: 501 */
    API_M_GET = 1,
    API_M_HEAD = 2,
    API_M_POST = 4,
    API_M_PUT = 8,
    API_M_DELETE = 16,
    API_M_OTHER = 32, /* PATCH, OPTIONS, TRACE, CONNECT: known, allowed nowhere (405) */
};

struct api_http_header {
    const char *name; /* as sent */
    const char *value;
};

/* A parsed request head. Every pointer points into `buf`, which it owns. */
struct api_http_head {
    char *buf; /* a copy of the head's bytes, cut into strings */
    enum api_http_method method;
    const char *method_name;
    const char *path;  /* raw (still encoded), up to '?' */
    const char *query; /* raw, after '?'; NULL when there is none */
    int minor;         /* HTTP/1.<minor>: 0 or 1 */
    struct api_http_header headers[API_HTTP_MAX_HEADERS];
    int nheaders;
    const char *host;          /* NULL when absent */
    const char *authorization; /* NULL when absent */
    long long content_length;  /* -1 when absent */
    bool keep_alive;           /* after this request (Connection, version) */
    bool expect_continue;      /* Expect: 100-continue */
    char error[160];
};

/*
 * Parse the head at the start of buf (len bytes received so far). 0: the
 * head is complete, h is filled and *used is its length (the body starts
 * there); API_HTTP_MORE: the head is incomplete and within max bytes; else an
 * HTTP status with h->error (431 when the head passes max bytes). Blank
 * lines before the request line are skipped. Release with api__http_head_release.
 */
int api__http_parse_head(const char *buf, size_t len, size_t max, struct api_http_head *h,
                         size_t *used);
void api__http_head_release(struct api_http_head *h);
/* The first header called name (case-insensitive), or NULL. */
const char *api__http_header(const struct api_http_head *h, const char *name);

/*
 * Split a raw path ("/v1/a%20b") into decoded segments. 0 with *segbuf (owned
 * by the caller, free) holding them and seg[0..*nseg) pointing into it; 404
 * when the path has more than max segments or an empty one ("//", a trailing
 * "/"); 400 with error for a bad escape, an encoded NUL or '/', a control
 * character, or a "." or ".." segment. "/" has no segment.
 */
int api__http_split_path(const char *path, char **segbuf, char **seg, int max, int *nseg,
                         char error[160]);

/*
 * Decode a raw query ("a=1&b=x%20y") into an object of strings (new
 * reference in *out; an empty object when query is NULL or empty). 400 with
 * error for a bad escape, an encoded NUL, a control character, or a key given
 * twice. '+' means a space.
 */
int api__http_parse_query(const char *query, json_t **out, char error[160]);

/*
 * The bearer token of an Authorization value: scheme "Bearer" in any case,
 * one or more spaces, then a token of 1 to max-1 token68 characters. 0 with
 * the token copied into out, or -1.
 */
int api__http_bearer(const char *authorization, char *out, size_t max);

/* The reason phrase of a status ("Not Found"). */
const char *api__http_reason(int status);

#endif
