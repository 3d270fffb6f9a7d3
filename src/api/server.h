/*
 * server: the API's HTTP/1.1 connections. Not public (src/api only).
 *
 * Accepts connections (plain or TLS), reads each request's head with the
 * strict parser (http.h), hands it to its owner (api.c) before any byte of
 * the body is read, reads the body only when the owner asks, and writes the
 * owner's reply. It owns the limits that keep slow or abusive clients from
 * holding the node (docs/api.md "Limits"):
 *
 *   - a head must arrive within header_timeout of the connection being
 *     ready for it (accepted, or the previous reply written): a client
 *     trickling bytes gets 408 and is closed; an idle one is just closed;
 *   - a body must arrive within body_timeout of the owner asking for it;
 *   - a reply must be taken at the pace in api_server_opts.timeout_ms;
 *   - at most max_connections connections are open, and at most
 *     max_per_source from one address. A connection beyond either limit
 *     goes to the overflow lane (API_OVERFLOW_MAX connections, a short head
 *     deadline, API_OVERFLOW_PER_SOURCE per address): its request head is
 *     read, the owner answers a probe (/healthz, /readyz, /metrics) and
 *     anything else with 503
 *     {"error": {"code": "unavailable"}} over plain HTTP and TLS alike.
 *     Beyond the lane, a plain connection gets the same 503 written at
 *     once and a TLS connection is closed (no handshake is spent on it).
 *
 * Request life: the server makes a struct api_req when a head has arrived
 * (or failed to parse: r->status) and calls on_head. From then on the
 * request belongs to the owner until it calls api__server_reply, which
 * writes (when the client is still there) and frees it. In between the owner
 * may call api__server_read_body once; on_body then reports the body
 * complete (0), its deadline passed (408) or the client gone (-1). If the
 * connection dies while the owner holds the request, r->conn becomes NULL and
 * the reply only frees it.
 *
 * Threads: the loop's thread only.
 */
#ifndef DROVER_API_SERVER_H
#define DROVER_API_SERVER_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "http.h"

struct event_base;
struct evbuffer;
struct api_server;
struct api_conn;

#define API_OVERFLOW_MAX 64       /* connections in the overflow lane */
#define API_OVERFLOW_PER_SOURCE 8 /* of them from one address */
#define API_OVERFLOW_TIMEOUT_MS 2000
#define API_LINGER_MS 2000 /* reading (and dropping) an unread body after a final reply */

struct api_req {
    struct api_conn *conn; /* NULL once the connection is gone */
    struct api_http_head head;
    int status;            /* 0, or the HTTP status the head failed with (head.error says why) */
    struct evbuffer *body; /* the body once on_body reported 0 */
    char source[64];       /* the client's address */
    bool overflow;         /* arrived beyond the connection limits: probes only */
    bool tls;
    void *user; /* the owner's */
    /* a streamed reply (api__server_stream_begin): called once the output has drained after
       a chunk, or when the connection died while the owner waited for that */
    void (*drained)(void *arg);
    void *drained_arg;
    bool drain_wait;
};

typedef void (*api_server_head_fn)(struct api_req *r, void *arg);
typedef void (*api_server_body_fn)(struct api_req *r, int status, void *arg);

struct api_server_opts {
    const char *listen; /* host:port */
    SSL_CTX *ssl;       /* NULL: plain HTTP (borrowed) */
    long max_headers;   /* bytes of request line and headers */
    long max_connections, max_per_source;
    long header_timeout_ms, body_timeout_ms;
    long timeout_ms; /* a reply's write may go this long without progress */
    api_server_head_fn on_head;
    api_server_body_fn on_body;
    void *arg;
};

struct api_server_stats {
    long open;                          /* connections within the limits */
    long overflow;                      /* in the overflow lane */
    unsigned long long refused;         /* answered 503 or closed for the limits */
    unsigned long long timeouts;        /* heads or bodies past their deadline */
    unsigned long long probes_overflow; /* probes answered in the overflow lane */
};

/* Listen. NULL with err (DRV_EINVAL bad address, DRV_EIO cannot bind). */
struct api_server *api__server_new(struct event_base *base, const struct api_server_opts *o,
                                   struct drv_err *err);
/* Close every connection (requests held by the owner lose their conn) and stop listening. */
void api__server_free(struct api_server *s);
void api__server_stats(const struct api_server *s, struct api_server_stats *st);

/*
 * Read r's body (head.content_length bytes, > 0), answering "100 Continue"
 * first when the client asked for it; on_body follows, possibly before this
 * returns (the body may have arrived with the head). 0, or -1 when the
 * client is gone (the owner then replies, which frees r).
 */
int api__server_read_body(struct api_req *r);

/*
 * Send the reply and free r. extra: more header lines, each ending in CRLF
 * (or NULL); body (len bytes, may be NULL) is taken over and freed; a reply
 * to HEAD sends the headers only. close: close the connection after it (it
 * is closed anyway after a failed head, an unread body or "Connection:
 * close").
 */
void api__server_reply(struct api_req *r, int status, const char *content_type, const char *extra,
                       char *body, size_t len, bool close);

/*
 * A reply in chunks (Transfer-Encoding: chunked), for a body too large to hold at once:
 * begin writes the head and returns 0, or returns 1 when r is done with already (the
 * client is gone, or a HEAD request got its head) and freed. Then write queues one chunk
 * (data, len bytes, taken over; len 0 queues nothing) and returns 0, after which
 * drained(arg) follows once: when the output has drained (write the next chunk, or end) or
 * when the connection dies first (r->conn is then NULL: end); or write returns -1 at once
 * when the client is gone (end). end queues the last chunk and frees r; abort closes the
 * connection without it (the client sees a cut reply) and frees r. Between begin and end or
 * abort the request stays the owner's.
 */
int api__server_stream_begin(struct api_req *r, int status, const char *content_type,
                             const char *extra, void (*drained)(void *arg), void *arg);
int api__server_stream_write(struct api_req *r, char *data, size_t len);
void api__server_stream_end(struct api_req *r);
void api__server_stream_abort(struct api_req *r);

/* {"error": {"code", "message"}} as compact JSON text with a newline (caller frees). */
char *api__error_text(const char *code, const char *message, const char *field,
                      const json_t *detail, size_t *len);

#endif
