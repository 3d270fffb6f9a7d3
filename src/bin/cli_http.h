/*
 * cli_http: the `drover` client's side of the HTTP API.
 *
 * Blocking calls (a command line may block) on a private libevent loop. The
 * server comes from --url or DROVER_URL (default http://127.0.0.1:8080), the
 * token from --token or DROVER_TOKEN; https:// URLs verify the server with
 * the system's CA store, or the PEM file in DROVER_CA_FILE.
 */
#ifndef DROVER_CLI_HTTP_H
#define DROVER_CLI_HTTP_H

#include <jansson.h>

struct cli_opts {
    const char *url;
    const char *token;
    int json; /* --json: print the API's JSON as is */
};

/*
 * Take --url URL, --token TOKEN and --json out of argv (anywhere), filling o
 * from them or the environment. Returns the new argc.
 */
int cli_take_opts(int argc, char **argv, struct cli_opts *o);

/*
 * METHOD path with an optional JSON body (borrowed). On any answer returns
 * the HTTP status and *out (new reference; NULL when the body is empty or not
 * JSON; *raw, when not NULL, receives the raw body, caller frees). Returns -1
 * when the server could not be reached (message printed).
 */
int cli_call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
             json_t **out, char **raw);

/*
 * Print an API error ({"error": {...}}) or the status to stderr, as
 * "drover: message (code, field)". Returns 1 (the API-error exit status).
 */
int cli_api_error(int status, const json_t *reply);

#endif
