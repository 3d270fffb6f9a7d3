/*
 * http_parse: the strict HTTP/1.1 request parser. See http.h for the rules
 * and the contract; RFC 9110 and 9112 for the grammar (tchar, VCHAR,
 * obs-text, token68).
 *
 * The head is parsed in two steps: a scan of what has arrived so far, which
 * refuses a NUL, a bare CR or LF and an overlong request line at once (a
 * slow client cannot make the server wait for a head that is already
 * wrong), and, once the blank line has arrived, a parse of a private copy
 * cut into strings.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "xalloc.h"

static bool is_tchar(unsigned char ch)
{
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_tchar((unsigned char)*s))
            return false;
    return true;
}

/* A header value's byte: HTAB, SP, VCHAR, obs-text. */
static bool is_field_byte(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

static int fail(struct api_http_head *h, int status, const char *msg)
{
    snprintf(h->error, sizeof(h->error), "%s", msg);
    return status;
}

/* What has arrived so far: 0 when it may still become a good head. */
static int scan(const char *buf, size_t len, struct api_http_head *h)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == 0)
            return fail(h, 400, "nul byte in the request head");
        if (ch == '\n' && (i == 0 || buf[i - 1] != '\r'))
            return fail(h, 400, "bare LF in the request head: lines end in CRLF");
        if (ch == '\r' && i + 1 < len && buf[i + 1] != '\n')
            return fail(h, 400, "bare CR in the request head: lines end in CRLF");
    }
    const char *eol = memmem(buf, len, "\r\n", 2);
    size_t line = eol ? (size_t)(eol - buf) : len;
    if (line > API_HTTP_MAX_TARGET + 64)
        return fail(h, 414, "request line too long");
    return 0;
}

static enum api_http_method method_of(const char *m)
{
    static const struct {
        const char *name;
        enum api_http_method m;
    } known[] = {{"GET", API_M_GET},       {"HEAD", API_M_HEAD},     {"POST", API_M_POST},
                 {"PUT", API_M_PUT},       {"DELETE", API_M_DELETE}, {"PATCH", API_M_OTHER},
                 {"OPTIONS", API_M_OTHER}, {"TRACE", API_M_OTHER},   {"CONNECT", API_M_OTHER},
                 {NULL, API_M_UNKNOWN}};
    for (int i = 0; known[i].name; i++)
        if (strcmp(known[i].name, m) == 0)
            return known[i].m;
    return API_M_UNKNOWN;
}

static int request_line(char *line, struct api_http_head *h)
{
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' '))
        return fail(h, 400, "malformed request line");
    *sp1 = *sp2 = '\0';
    char *target = sp1 + 1, *version = sp2 + 1;
    if (!is_token(line) || strlen(line) > 20)
        return fail(h, 400, "malformed method");
    h->method_name = line;
    h->method = method_of(line);
    if (strlen(target) > API_HTTP_MAX_TARGET)
        return fail(h, 414, "request target too long");
    for (const char *p = target; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#')
            return fail(h, 400, "bad character in the request target");
    if (target[0] != '/')
        return fail(h, 400, "request target must be a path starting with '/'");
    if (strcmp(version, "HTTP/1.1") == 0)
        h->minor = 1;
    else if (strcmp(version, "HTTP/1.0") == 0)
        h->minor = 0;
    else if (strncmp(version, "HTTP/", 5) == 0 && isdigit((unsigned char)version[5]) &&
             version[6] == '.' && isdigit((unsigned char)version[7]) && !version[8])
        return fail(h, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
    else
        return fail(h, 400, "malformed HTTP version");
    h->path = target;
    char *q = strchr(target, '?');
    if (q) {
        /* The path ends at '?': target then names the path alone. */
        *q = '\0';
        h->query = q + 1;
    }
    return 0;
}

/* Connection: a comma-separated list of tokens. */
static void connection_tokens(const char *v, bool *close, bool *keep)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        if (strcasecmp(t, "close") == 0)
            *close = true;
        else if (strcasecmp(t, "keep-alive") == 0)
            *keep = true;
    }
}

static int header_line(char *line, struct api_http_head *h, int *seen_te, bool *close, bool *keep)
{
    if (line[0] == ' ' || line[0] == '\t')
        return fail(h, 400, "folded header line");
    char *colon = strchr(line, ':');
    if (!colon)
        return fail(h, 400, "header line without ':'");
    *colon = '\0';
    if (!is_token(line))
        return fail(h, 400, "malformed header name");
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    for (const char *p = v; *p; p++)
        if (!is_field_byte((unsigned char)*p))
            return fail(h, 400, "control character in a header value");
    char *end = v + strlen(v);
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    if (h->nheaders == API_HTTP_MAX_HEADERS)
        return fail(h, 431, "too many header lines");
    h->headers[h->nheaders].name = line;
    h->headers[h->nheaders].value = v;
    h->nheaders++;
    if (strcasecmp(line, "host") == 0) {
        if (h->host)
            return fail(h, 400, "more than one Host header");
        h->host = v;
    } else if (strcasecmp(line, "content-length") == 0) {
        if (h->content_length >= 0)
            return fail(h, 400, "more than one Content-Length header");
        size_t n = strlen(v);
        if (n == 0 || strspn(v, "0123456789") != n)
            return fail(h, 400, "Content-Length must be a decimal number");
        if (n > 18)
            return fail(h, 413, "request body too large");
        h->content_length = strtoll(v, NULL, 10);
    } else if (strcasecmp(line, "transfer-encoding") == 0) {
        (*seen_te)++;
    } else if (strcasecmp(line, "authorization") == 0) {
        if (h->authorization)
            return fail(h, 400, "more than one Authorization header");
        h->authorization = v;
    } else if (strcasecmp(line, "connection") == 0) {
        connection_tokens(v, close, keep);
    } else if (strcasecmp(line, "expect") == 0) {
        if (strcasecmp(v, "100-continue") != 0)
            return fail(h, 417, "only Expect: 100-continue is supported");
        h->expect_continue = true;
    }
    return 0;
}

int api__http_parse_head(const char *buf, size_t len, size_t max, struct api_http_head *h,
                         size_t *used)
{
    memset(h, 0, sizeof(*h));
    h->content_length = -1;
    *used = 0;
    size_t start = 0;
    while (start + 1 < len && buf[start] == '\r' && buf[start + 1] == '\n')
        start += 2;
    /* What follows the head (a body, a pipelined request) is not the head's to judge. */
    const char *end = memmem(buf + start, len - start, "\r\n\r\n", 4);
    int rc = scan(buf + start, end ? (size_t)(end - (buf + start)) + 4 : len - start, h);
    if (rc)
        return rc;
    if (!end) {
        if (len > max)
            return fail(h, 431, "request head too large");
        return API_HTTP_MORE;
    }
    size_t head_len = (size_t)(end - buf) + 4;
    if (head_len > max)
        return fail(h, 431, "request head too large");
    *used = head_len;
    size_t n = (size_t)(end - (buf + start)) + 2; /* the lines, each with its CRLF */
    h->buf = xmalloc(n + 1);
    memcpy(h->buf, buf + start, n);
    h->buf[n] = '\0';

    char *line = h->buf;
    char *eol = strstr(line, "\r\n");
    *eol = '\0';
    if ((rc = request_line(line, h)) != 0)
        return rc;
    int seen_te = 0;
    bool close = false, keep = false;
    for (line = eol + 2; *line; line = eol + 2) {
        eol = strstr(line, "\r\n");
        *eol = '\0';
        if ((rc = header_line(line, h, &seen_te, &close, &keep)) != 0)
            return rc;
    }
    if (h->minor == 1 && !h->host)
        return fail(h, 400, "an HTTP/1.1 request needs a Host header");
    if (seen_te && h->content_length >= 0)
        return fail(h, 400, "both Transfer-Encoding and Content-Length");
    if (seen_te)
        return fail(h, 501, "Transfer-Encoding is not supported: send Content-Length");
    h->keep_alive = h->minor == 1 ? !close : (keep && !close);
    return 0;
}

void api__http_head_release(struct api_http_head *h)
{
    free(h->buf);
    memset(h, 0, sizeof(*h));
    h->content_length = -1;
}

const char *api__http_header(const struct api_http_head *h, const char *name)
{
    for (int i = 0; i < h->nheaders; i++)
        if (strcasecmp(h->headers[i].name, name) == 0)
            return h->headers[i].value;
    return NULL;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Decode src[0..n) into out (at most n bytes and a NUL); plus_space for
 * queries. 0, or 400 with error: a bad escape, an encoded NUL, a control
 * character, and (slash_ok false) an encoded '/'.
 */
static int decode(const char *src, size_t n, char *out, bool plus_space, bool slash_ok,
                  const char *what, char error[160])
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hexval(src[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                snprintf(error, 160, "bad percent-encoding in the %s", what);
                return 400;
            }
            ch = (unsigned char)(hi * 16 + lo);
            i += 2;
            if (ch == 0) {
                snprintf(error, 160, "encoded NUL in the %s", what);
                return 400;
            }
            if (ch == '/' && !slash_ok) {
                snprintf(error, 160, "encoded '/' in the %s", what);
                return 400;
            }
        } else if (ch == '+' && plus_space) {
            ch = ' ';
        }
        if (ch < 0x20 || ch == 0x7f) {
            snprintf(error, 160, "control character in the %s", what);
            return 400;
        }
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    return 0;
}

int api__http_split_path(const char *path, char **segbuf, char **seg, int max, int *nseg,
                         char error[160])
{
    *segbuf = NULL;
    *nseg = 0;
    if (path[0] != '/') {
        snprintf(error, 160, "path must start with '/'");
        return 400;
    }
    char *buf = xmalloc(strlen(path) + 1);
    char *o = buf;
    const char *p = path + 1;
    int n = 0, status = 0;
    if (*p) {
        for (;;) {
            size_t len = strcspn(p, "/");
            if (len == 0) {
                snprintf(error, 160, "empty path segment");
                status = 404;
                break;
            }
            if ((status = decode(p, len, o, false, false, "path", error)) != 0)
                break;
            if (strcmp(o, ".") == 0 || strcmp(o, "..") == 0) {
                snprintf(error, 160, "\".\" and \"..\" segments are not allowed in the path");
                status = 400;
                break;
            }
            if (n == max) {
                snprintf(error, 160, "path too deep");
                status = 404;
                break;
            }
            seg[n++] = o;
            o += strlen(o) + 1;
            p += len;
            if (!*p)
                break;
            p++; /* the '/' */
        }
    }
    if (status) {
        free(buf);
        return status;
    }
    *segbuf = buf;
    *nseg = n;
    return 0;
}

int api__http_parse_query(const char *query, json_t **out, char error[160])
{
    *out = json_object();
    if (!query || !*query)
        return 0;
    size_t qlen = strlen(query);
    char *key = xmalloc(qlen + 1), *val = xmalloc(qlen + 1);
    int status = 0;
    const char *p = query;
    while (*p && !status) {
        size_t len = strcspn(p, "&");
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t klen = eq ? (size_t)(eq - p) : len;
            status = decode(p, klen, key, true, true, "query", error);
            if (!status && eq)
                status = decode(eq + 1, len - klen - 1, val, true, true, "query", error);
            else if (!status)
                val[0] = '\0';
            if (!status && !key[0]) {
                snprintf(error, 160, "empty key in the query");
                status = 400;
            }
            if (!status && json_object_get(*out, key)) {
                snprintf(error, 160, "query parameter \"%.60s\" given twice", key);
                status = 400;
            }
            if (!status)
                json_object_set_new(*out, key, json_string(val));
        }
        p += len;
        if (*p)
            p++;
    }
    free(key);
    free(val);
    if (status) {
        json_decref(*out);
        *out = NULL;
    }
    return status;
}

int api__http_bearer(const char *authorization, char *out, size_t max)
{
    if (!authorization || strncasecmp(authorization, "bearer", 6) != 0 || authorization[6] != ' ')
        return -1;
    const char *t = authorization + 6;
    while (*t == ' ')
        t++;
    size_t n = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/");
    n += strspn(t + n, "=");
    if (n == 0 || t[n] || n >= max)
        return -1;
    memcpy(out, t, n);
    out[n] = '\0';
    return 0;
}

const char *api__http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return status >= 500 ? "Internal Server Error" : status >= 400 ? "Bad Request" : "OK";
    }
}
