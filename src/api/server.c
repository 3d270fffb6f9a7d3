/*
 * server: the API's HTTP/1.1 connections. See server.h for the contract.
 *
 * Why not evhttp: libevent's server reads the whole body before its
 * callback sees the request (so a token cannot be checked first), keeps the
 * first of two Content-Length headers, cuts header values at a NUL, accepts
 * HTTP/1.1 without Host, answers 413 and 501 with HTML, has no connection
 * limit, and bounds only silence, not the time a request takes to arrive.
 *
 * One connection, one state machine (the loop's thread drives it):
 *
 *   accept --> HEAD --(head parsed or failed)--> OWNER --(read_body)--> BODY
 *                ^                                 ^  |                   |
 *                |                                 |  +----(reply)---+   |
 *                |                                 +--(body, 408, gone)--+
 *                |                                                   v
 *                +----------(written, keep-alive)-------------- WRITE
 *                                                                  | (close)
 *                                                                  v
 *                                        LINGER (unread input) -> freed
 *
 *   A streamed reply:
 *
 *   OWNER --(stream_begin)--> STREAM --(stream_end)--> WRITE
 *     |                        ^  |
 *     |                        +--+ (a chunk written, drained: the owner's next)
 *     +--(stream_begin of a HEAD: the head only)--> WRITE
 *
 *   HEAD:  reading; the head deadline runs (header_timeout, or the overflow
 *          lane's); the read buffer is capped at max_headers + 1 bytes.
 *   OWNER: the request is the owner's; reading continues only to see the
 *          client go (input capped at max_headers bytes, pipelined requests
 *          wait there); EOF marks the peer half-closed and the reply still
 *          goes out, then the connection closes.
 *   BODY:  the body's bytes move to the request as they come; the body
 *          deadline runs.
 *   WRITE: the reply drains; the write deadline is timeout_ms plus one
 *          second per 64 KiB of reply.
 *   STREAM: a reply sent in chunks (api__server_stream_begin, OWNER to
 *          STREAM): each chunk written re-arms the write deadline the same
 *          way; once the output has drained the owner's drained callback asks
 *          for the next; the last chunk (api__server_stream_end) makes it WRITE.
 *          The request stays the owner's: a connection that dies meanwhile
 *          sets r->conn to NULL and, when the owner waits for a drain, calls
 *          its drained callback so that it ends the stream.
 *   LINGER: after a final reply that left input unread, the write side is
 *          shut and input dropped for up to API_LINGER_MS, so the client
 *          reads the reply before the close (closing with unread input
 *          would send a reset that can destroy it).
 *
 * Counting: a connection within the limits counts in `open` and in its
 * source's entry of `per_source` from accept to free; one in the overflow
 * lane counts in `overflow` and `lane_source` instead.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>

#include "config.h"
#include "log.h"
#include "xalloc.h"

#define MODULE "api"

enum conn_state { ST_HEAD, ST_OWNER, ST_BODY, ST_WRITE, ST_LINGER, ST_STREAM };

struct api_conn {
    struct api_server *s;
    struct api_conn *prev, *next; /* every connection, for api__server_free */
    struct bufferevent *bev;
    evutil_socket_t fd;
    struct event *deadline;
    char source[64];
    enum conn_state state;
    bool overflow, tls;
    bool head_started; /* a byte of the current head arrived */
    bool peer_eof;     /* the client shut its side */
    bool close_after;  /* close once the reply is written */
    bool unread;       /* input the reply left unread (a refused body, a bad head) */
    struct api_req *req;
    size_t body_want;
};

struct api_server {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *resume; /* re-enable accepting after running out of descriptors */
    struct api_server_opts o;
    struct api_conn *conns;
    json_t *per_source, *lane_source; /* address -> count */
    struct api_server_stats st;
};

/* ---- helpers -------------------------------------------------------------------- */

char *api__error_text(const char *code, const char *message, const char *field,
                      const json_t *detail, size_t *len)
{
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", message);
    if (json_is_object(detail))
        json_object_update_missing(e, (json_t *)detail);
    if (field && *field)
        json_object_set_new(e, "field", json_string(field));
    json_t *j = json_pack("{s:o}", "error", e);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    size_t n = strlen(s);
    s = xrealloc(s, n + 2);
    s[n] = '\n';
    s[n + 1] = '\0';
    *len = n + 1;
    return s;
}

static void count(json_t *map, const char *key, int delta)
{
    json_int_t v = json_integer_value(json_object_get(map, key)) + delta;
    if (v <= 0)
        json_object_del(map, key);
    else
        json_object_set_new(map, key, json_integer(v));
}

static long counted(json_t *map, const char *key)
{
    return (long)json_integer_value(json_object_get(map, key));
}

static void arm(struct api_conn *c, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->deadline, &tv);
}

static void req_free(struct api_req *r)
{
    if (!r)
        return;
    api__http_head_release(&r->head);
    if (r->body)
        evbuffer_free(r->body);
    free(r);
}

static void conn_free(struct api_conn *c)
{
    struct api_server *s = c->s;
    struct api_req *waiting = NULL; /* a stream's owner waiting for a drain */
    if (c->req) {
        if (c->state == ST_HEAD || c->state == ST_WRITE || c->state == ST_LINGER) {
            req_free(c->req); /* still ours */
        } else {
            c->req->conn = NULL; /* the owner's: its reply will only free it */
            if (c->state == ST_STREAM && c->req->drain_wait)
                waiting = c->req;
        }
        c->req = NULL;
    }
    if (c->overflow) {
        s->st.overflow--;
        count(s->lane_source, c->source, -1);
    } else {
        s->st.open--;
        count(s->per_source, c->source, -1);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->deadline);
    if (c->tls) {
        SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
        if (ssl && SSL_is_init_finished(ssl))
            SSL_shutdown(ssl); /* close_notify, best effort */
    }
    bufferevent_free(c->bev);
    free(c);
    if (waiting) {
        waiting->drain_wait = false;
        waiting->drained(waiting->drained_arg);
    }
}

/* Queue a canned JSON error and close after it (the server's own replies: 408, 503). */
static void canned(struct api_conn *c, int status, const char *code, const char *msg);

/* ---- reading ----------------------------------------------------------------- */

static void start_head(struct api_conn *c);
static void on_read(struct bufferevent *bev, void *arg);

static void read_head(struct api_conn *c)
{
    struct api_server *s = c->s;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t len = evbuffer_get_length(in);
    if (len == 0)
        return;
    c->head_started = true;
    size_t n = len > (size_t)s->o.max_headers + 1 ? (size_t)s->o.max_headers + 1 : len;
    const char *data = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    struct api_req *r = xcalloc(1, sizeof(*r));
    size_t used = 0;
    int rc = api__http_parse_head(data, n, (size_t)s->o.max_headers, &r->head, &used);
    if (rc == API_HTTP_MORE) {
        req_free(r);
        return;
    }
    if (rc == 0) {
        evbuffer_drain(in, used);
    } else {
        r->status = rc;
        c->unread = true;
    }
    r->conn = c;
    snprintf(r->source, sizeof(r->source), "%s", c->source);
    r->overflow = c->overflow;
    r->tls = c->tls;
    c->req = r;
    c->state = ST_OWNER;
    event_del(c->deadline);
    /* Keep reading, to see the client go; pipelined requests wait in a capped buffer. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)s->o.max_headers);
    s->o.on_head(r, s->o.arg);
}

static void read_body(struct api_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t len = evbuffer_get_length(in);
    size_t take = len < c->body_want ? len : c->body_want;
    if (take) {
        evbuffer_remove_buffer(in, c->req->body, take);
        c->body_want -= take;
    }
    if (c->body_want > 0)
        return;
    struct api_req *r = c->req;
    c->state = ST_OWNER;
    event_del(c->deadline);
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)c->s->o.max_headers);
    c->s->o.on_body(r, 0, c->s->o.arg);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct api_conn *c = arg;
    switch (c->state) {
    case ST_HEAD:
        read_head(c);
        break;
    case ST_BODY:
        read_body(c);
        break;
    case ST_LINGER:
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
        break;
    case ST_OWNER:
    case ST_WRITE:
    case ST_STREAM:
        break; /* pipelined: read after the reply */
    }
}

int api__server_read_body(struct api_req *r)
{
    struct api_conn *c = r->conn;
    if (!c)
        return -1;
    struct api_server *s = c->s;
    r->body = evbuffer_new();
    c->state = ST_BODY;
    c->body_want = (size_t)r->head.content_length;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (r->head.expect_continue && evbuffer_get_length(in) == 0)
        bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
    bufferevent_enable(c->bev, EV_READ);
    arm(c, s->o.body_timeout_ms);
    if (c->peer_eof && evbuffer_get_length(in) < c->body_want) {
        /* The client shut its side before sending the body: it will not come. */
        event_del(c->deadline);
        c->state = ST_OWNER;
        c->unread = true;
        s->o.on_body(r, -1, s->o.arg);
        return 0;
    }
    read_body(c);
    return 0;
}

/* ---- writing ----------------------------------------------------------------- */

static void on_written(struct bufferevent *bev, void *arg);

static void free_text(const void *data, size_t len, void *arg)
{
    free((void *)data);
}

void api__server_reply(struct api_req *r, int status, const char *content_type, const char *extra,
                       char *body, size_t len, bool close)
{
    struct api_conn *c = r->conn;
    if (!c) {
        free(body);
        req_free(r);
        return;
    }
    if (r->body == NULL && r->head.content_length > 0)
        c->unread = true; /* the body was never asked for */
    c->close_after =
        close || c->unread || c->peer_eof || r->status || !r->head.keep_alive || c->overflow;
    bool head_only = r->head.method == API_M_HEAD;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status, api__http_reason(status));
    if (body && content_type)
        evbuffer_add_printf(out, "Content-Type: %s\r\n", content_type);
    if (status != 204 && status != 304)
        evbuffer_add_printf(out, "Content-Length: %zu\r\n", body ? len : 0);
    if (c->close_after)
        evbuffer_add_printf(out, "Connection: close\r\n");
    if (extra)
        evbuffer_add(out, extra, strlen(extra));
    evbuffer_add(out, "\r\n", 2);
    if (body && len && !head_only && status != 204 && status != 304)
        evbuffer_add_reference(out, body, len, free_text, NULL);
    else
        free(body);
    req_free(r);
    c->req = NULL;
    c->state = ST_WRITE;
    /* A reply must be taken at some pace: the silence bound plus a second per 64 KiB. */
    arm(c, c->s->o.timeout_ms + (long)(evbuffer_get_length(out) / 65536) * 1000);
    bufferevent_enable(c->bev, EV_WRITE);
}

/* ---- streaming ----------------------------------------------------------------- */

static void arm_write(struct api_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    arm(c, c->s->o.timeout_ms + (long)(evbuffer_get_length(out) / 65536) * 1000);
    bufferevent_enable(c->bev, EV_WRITE);
}

int api__server_stream_begin(struct api_req *r, int status, const char *content_type,
                             const char *extra, void (*drained)(void *arg), void *arg)
{
    struct api_conn *c = r->conn;
    if (!c) {
        req_free(r);
        return 1;
    }
    if (r->body == NULL && r->head.content_length > 0)
        c->unread = true;
    c->close_after = c->unread || c->peer_eof || r->status || !r->head.keep_alive || c->overflow;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status, api__http_reason(status));
    if (content_type)
        evbuffer_add_printf(out, "Content-Type: %s\r\n", content_type);
    evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n");
    if (c->close_after)
        evbuffer_add_printf(out, "Connection: close\r\n");
    if (extra)
        evbuffer_add(out, extra, strlen(extra));
    evbuffer_add(out, "\r\n", 2);
    if (r->head.method == API_M_HEAD) { /* the head is all a HEAD gets */
        req_free(r);
        c->req = NULL;
        c->state = ST_WRITE;
        arm_write(c);
        return 1;
    }
    r->drained = drained;
    r->drained_arg = arg;
    r->drain_wait = false;
    c->state = ST_STREAM;
    return 0;
}

int api__server_stream_write(struct api_req *r, char *data, size_t len)
{
    struct api_conn *c = r->conn;
    if (!c) {
        free(data);
        return -1;
    }
    if (len) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        evbuffer_add_printf(out, "%zx\r\n", len);
        evbuffer_add_reference(out, data, len, free_text, NULL);
        evbuffer_add(out, "\r\n", 2);
    } else {
        free(data);
    }
    r->drain_wait = true;
    arm_write(c);
    return 0;
}

void api__server_stream_end(struct api_req *r)
{
    struct api_conn *c = r->conn;
    if (!c) {
        req_free(r);
        return;
    }
    evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
    req_free(r);
    c->req = NULL;
    c->state = ST_WRITE;
    arm_write(c);
}

void api__server_stream_abort(struct api_req *r)
{
    struct api_conn *c = r->conn;
    if (c) {
        r->drain_wait = false;
        conn_free(c); /* the request is the owner's: only its conn is cut */
    }
    req_free(r);
}

static void linger(struct api_conn *c)
{
    c->state = ST_LINGER;
    if (!c->tls)
        shutdown(c->fd, SHUT_WR);
    bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
    evbuffer_drain(bufferevent_get_input(c->bev),
                   evbuffer_get_length(bufferevent_get_input(c->bev)));
    arm(c, API_LINGER_MS);
}

static void on_written(struct bufferevent *bev, void *arg)
{
    struct api_conn *c = arg;
    if (c->state == ST_STREAM && c->req && c->req->drain_wait &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        event_del(c->deadline);
        c->req->drain_wait = false;
        c->req->drained(c->req->drained_arg); /* the owner's next chunk, or its end */
        return;
    }
    if (c->state != ST_WRITE || evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return;
    event_del(c->deadline);
    if (c->close_after) {
        if (c->unread && !c->peer_eof)
            linger(c);
        else
            conn_free(c);
        return;
    }
    start_head(c);
    read_head(c); /* a pipelined request may be waiting */
}

static void canned(struct api_conn *c, int status, const char *code, const char *msg)
{
    size_t len;
    char *body = api__error_text(code, msg, NULL, NULL, &len);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                        "%zu\r\nConnection: close\r\n\r\n",
                        status, api__http_reason(status), len);
    evbuffer_add(out, body, len);
    free(body);
    c->close_after = true;
    c->unread = true;
    c->state = ST_WRITE;
    arm(c, c->s->o.timeout_ms);
    bufferevent_enable(c->bev, EV_WRITE);
}

/* ---- events and deadlines ------------------------------------------------------- */

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct api_conn *c = arg;
    struct api_server *s = c->s;
    switch (c->state) {
    case ST_HEAD:
        if (c->overflow) {
            s->st.refused++;
            canned(c, 503, "unavailable", "too many connections");
        } else if (c->head_started) {
            s->st.timeouts++;
            log_debug(MODULE, "event=head-timeout source=%s", c->source);
            canned(c, 408, "timeout", "the request head took too long to arrive");
        } else {
            conn_free(c); /* idle: nothing to answer */
        }
        break;
    case ST_BODY: {
        s->st.timeouts++;
        log_debug(MODULE, "event=body-timeout source=%s", c->source);
        struct api_req *r = c->req;
        c->state = ST_OWNER;
        c->unread = true;
        s->o.on_body(r, 408, s->o.arg);
        break;
    }
    case ST_WRITE:
    case ST_STREAM:
        log_debug(MODULE, "event=write-timeout source=%s", c->source);
        conn_free(c);
        break;
    case ST_LINGER:
        conn_free(c);
        break;
    case ST_OWNER:
        break;
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct api_conn *c = arg;
    struct api_server *s = c->s;
    if (what == BEV_EVENT_CONNECTED)
        return; /* the TLS handshake is done */
    if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
        (c->state == ST_OWNER || c->state == ST_WRITE || c->state == ST_STREAM)) {
        c->peer_eof = true; /* half-closed: the reply still goes out, then we close */
        return;
    }
    if ((what & BEV_EVENT_EOF) && c->state == ST_HEAD && !c->head_started) {
        conn_free(c);
        return;
    }
    if (c->state == ST_BODY) {
        struct api_req *r = c->req;
        event_del(c->deadline);
        c->req = NULL;
        r->conn = NULL;
        conn_free(c);
        s->o.on_body(r, -1, s->o.arg);
        return;
    }
    conn_free(c);
}

static void start_head(struct api_conn *c)
{
    c->state = ST_HEAD;
    c->head_started = false;
    c->unread = false;
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)c->s->o.max_headers + 1);
    bufferevent_enable(c->bev, EV_READ);
    arm(c, c->overflow
               ? (c->s->o.header_timeout_ms < API_OVERFLOW_TIMEOUT_MS ? c->s->o.header_timeout_ms
                                                                      : API_OVERFLOW_TIMEOUT_MS)
               : c->s->o.header_timeout_ms);
}

/* ---- accepting ------------------------------------------------------------------ */

/* Beyond the lane too: a plain client gets the 503 written at once, a TLS one is closed. */
static void refuse_now(struct api_server *s, evutil_socket_t fd)
{
    s->st.refused++;
    if (!s->o.ssl) {
        size_t len;
        char *body = api__error_text("unavailable", "too many connections", NULL, NULL, &len);
        char buf[512];
        int n = snprintf(buf, sizeof(buf),
                         "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         len, body);
        free(body);
        if (send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            log_debug(MODULE, "event=refuse-write-failed errno=%d", errno);
    }
    evutil_closesocket(fd);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct api_server *s = arg;
    char source[64] = "";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, source, sizeof(source));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, source, sizeof(source));
    bool overflow =
        s->st.open >= s->o.max_connections || counted(s->per_source, source) >= s->o.max_per_source;
    if (overflow && (s->st.overflow >= API_OVERFLOW_MAX ||
                     counted(s->lane_source, source) >= API_OVERFLOW_PER_SOURCE)) {
        log_debug(MODULE, "event=connection-refused source=%s open=%ld", source, s->st.open);
        refuse_now(s, fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct api_conn *c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->fd = fd;
    c->overflow = overflow;
    c->tls = s->o.ssl != NULL;
    snprintf(c->source, sizeof(c->source), "%s", source);
    if (c->tls)
        c->bev = bufferevent_openssl_socket_new(s->base, fd, SSL_new(s->o.ssl),
                                                BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    else
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        evutil_closesocket(fd);
        free(c);
        return;
    }
    if (overflow) {
        s->st.overflow++;
        count(s->lane_source, source, 1);
        log_debug(MODULE, "event=connection-overflow source=%s open=%ld", source, s->st.open);
    } else {
        s->st.open++;
        count(s->per_source, source, 1);
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    c->deadline = event_new(s->base, -1, 0, on_deadline, c);
    bufferevent_setcb(c->bev, on_read, on_written, on_event, c);
    start_head(c);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct api_server *s = arg;
    evconnlistener_enable(s->listener);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    struct api_server *s = arg;
    int e = EVUTIL_SOCKET_ERROR();
    log_warn(MODULE, "event=accept-failed errno=%d error=\"%s\"", e, strerror(e));
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        /* Out of descriptors: pause instead of spinning on a failing accept. */
        evconnlistener_disable(l);
        struct timeval tv = {0, 100000};
        event_add(s->resume, &tv);
    }
}

struct api_server *api__server_new(struct event_base *base, const struct api_server_opts *o,
                                   struct drv_err *err)
{
    char host[256];
    int port;
    if (config_split_addr(o->listen, host, sizeof(host), &port) != 0) {
        drv_err_set(err, DRV_EINVAL, 0, "bad listen address \"%s\"", o->listen);
        return NULL;
    }
    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    char spec[300];
    snprintf(spec, sizeof(spec), "%s:%d", host, port);
    memset(&ss, 0, sizeof(ss));
    if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &sslen) != 0) {
        drv_err_set(err, DRV_EINVAL, 0, "bad listen address \"%s\" (a numeric address)", o->listen);
        return NULL;
    }
    struct api_server *s = xcalloc(1, sizeof(*s));
    s->base = base;
    s->o = *o;
    s->per_source = json_object();
    s->lane_source = json_object();
    s->listener = evconnlistener_new_bind(
        base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 1024,
        (struct sockaddr *)&ss, sslen);
    if (!s->listener) {
        drv_err_set(err, DRV_EIO, errno, "cannot listen on %s: %s", o->listen, strerror(errno));
        api__server_free(s);
        return NULL;
    }
    evconnlistener_set_error_cb(s->listener, on_accept_error);
    s->resume = event_new(base, -1, 0, on_resume, s);
    return s;
}

void api__server_free(struct api_server *s)
{
    if (!s)
        return;
    while (s->conns)
        conn_free(s->conns);
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->resume)
        event_free(s->resume);
    json_decref(s->per_source);
    json_decref(s->lane_source);
    free(s);
}

void api__server_stats(const struct api_server *s, struct api_server_stats *st)
{
    *st = s->st;
}
