/* cli_http: see cli_http.h. */
#include "cli_http.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "xalloc.h"

int cli_take_opts(int argc, char **argv, struct cli_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->url = getenv("DROVER_URL");
    o->token = getenv("DROVER_TOKEN");
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            o->url = argv[++i];
        else if (strncmp(argv[i], "--url=", 6) == 0)
            o->url = argv[i] + 6;
        else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc)
            o->token = argv[++i];
        else if (strncmp(argv[i], "--token=", 8) == 0)
            o->token = argv[i] + 8;
        else if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    if (!o->url || !*o->url)
        o->url = "http://127.0.0.1:8080";
    if (!o->token)
        o->token = "";
    return n;
}

struct reply {
    int status;
    char *body;
    int done;
    char error[256];
};

static void on_reply(struct evhttp_request *req, void *arg)
{
    struct reply *r = arg;
    r->done = 1;
    if (!req || evhttp_request_get_response_code(req) == 0) {
        snprintf(r->error, sizeof(r->error), "no answer");
        return;
    }
    r->status = evhttp_request_get_response_code(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    r->body = xmalloc(n + 1);
    evbuffer_remove(in, r->body, n);
    r->body[n] = '\0';
}

int cli_call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
             json_t **out, char **raw)
{
    *out = NULL;
    if (raw)
        *raw = NULL;
    struct evhttp_uri *uri = evhttp_uri_parse(o->url);
    const char *scheme = uri ? evhttp_uri_get_scheme(uri) : NULL;
    const char *host = uri ? evhttp_uri_get_host(uri) : NULL;
    if (!uri || !scheme || !host || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        fprintf(stderr, "drover: bad url \"%s\" (expected http://host:port or https://...)\n",
                o->url);
        if (uri)
            evhttp_uri_free(uri);
        return -1;
    }
    int tls = strcmp(scheme, "https") == 0;
    int port = evhttp_uri_get_port(uri);
    if (port < 0)
        port = tls ? 443 : 80;
    const char *prefix = evhttp_uri_get_path(uri);
    char *full = xasprintf("%s%s", prefix && strcmp(prefix, "/") != 0 ? prefix : "", path);

    struct event_base *base = event_base_new();
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    struct bufferevent *bev = NULL;
    if (tls) {
        ctx = SSL_CTX_new(TLS_client_method());
        const char *ca = getenv("DROVER_CA_FILE");
        if (ca && *ca)
            SSL_CTX_load_verify_locations(ctx, ca, NULL);
        else
            SSL_CTX_set_default_verify_paths(ctx);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        ssl = SSL_new(ctx);
        unsigned char addr[16];
        if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
        } else {
            SSL_set_tlsext_host_name(ssl, host);
            SSL_set1_host(ssl, host);
        }
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    }
    struct evhttp_connection *conn =
        evhttp_connection_base_bufferevent_new(base, NULL, bev, host, (unsigned short)port);
    evhttp_connection_set_timeout(conn, 60);
    struct reply r = {0};
    struct evhttp_request *req = evhttp_request_new(on_reply, &r);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", host);
    evhttp_add_header(h, "Connection", "close");
    if (*o->token) {
        char *auth = xasprintf("Bearer %s", o->token);
        evhttp_add_header(h, "Authorization", auth);
        free(auth);
    }
    if (body) {
        char *s = json_dumps(body, JSON_COMPACT);
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(evhttp_request_get_output_buffer(req), s, strlen(s));
        free(s);
    }
    enum evhttp_cmd_type cmd = strcmp(method, "POST") == 0     ? EVHTTP_REQ_POST
                               : strcmp(method, "PUT") == 0    ? EVHTTP_REQ_PUT
                               : strcmp(method, "DELETE") == 0 ? EVHTTP_REQ_DELETE
                                                               : EVHTTP_REQ_GET;
    int rc = -1;
    if (evhttp_make_request(conn, req, cmd, full) == 0) {
        event_base_dispatch(base);
        if (r.status > 0) {
            rc = r.status;
            if (r.body && *r.body)
                *out = json_loads(r.body, 0, NULL);
            if (raw) {
                *raw = r.body;
                r.body = NULL;
            }
        } else {
            unsigned long e = tls ? ERR_peek_last_error() : 0;
            char es[200] = "";
            if (e)
                ERR_error_string_n(e, es, sizeof(es));
            fprintf(stderr, "drover: cannot reach %s%s%s\n", o->url, e ? ": " : "", es);
        }
    }
    free(r.body);
    evhttp_connection_free(conn);
    event_base_free(base);
    if (ctx)
        SSL_CTX_free(ctx);
    free(full);
    evhttp_uri_free(uri);
    return rc;
}

int cli_api_error(int status, const json_t *reply)
{
    json_t *e = json_object_get(reply, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *field = json_string_value(json_object_get(e, "field"));
    if (msg)
        fprintf(stderr, "drover: %s (%d %s%s%s)\n", msg, status, code ? code : "",
                field ? ", field " : "", field ? field : "");
    else
        fprintf(stderr, "drover: the server answered %d\n", status);
    return 1;
}
