/*
 * ui: the web dashboard's static files, served under /ui/ (docs/ui.md).
 *
 * The files of one directory (ui.dir; default the source tree's ui/) are read
 * once, when droverd starts, into a table in memory: a request is answered by
 * looking its name up in that table, never by opening a file, so no request
 * can reach a file outside the directory (a ".." or an encoded "/" is refused
 * by the path splitter anyway), and the loop never waits on a disk. Files
 * whose names start with a dot, symbolic links, and files of a type not in
 * the table of content types are left out. Changing the files needs a restart.
 *
 * Every answer carries a strict Content-Security-Policy (scripts and styles
 * from this origin only: no inline script, no eval), nosniff, no framing, and
 * an ETag (a hash of the bytes) with "Cache-Control: no-cache": the browser
 * keeps its copy and asks again with If-None-Match, and gets 304 until the
 * file changes. Errors are the API's JSON errors.
 *
 * Threads: api_ui_load at start-up; api_ui_answer is pure and reads the table
 * only, on any thread. Ownership: the table belongs to its loader, freed with
 * api_ui_free; a reply points into the table (valid while it lives).
 */
#ifndef DROVER_API_UI_H
#define DROVER_API_UI_H

#include <stddef.h>

#include "error.h"

#define API_UI_MAX_FILES 512
#define API_UI_MAX_FILE (2L << 20)   /* bytes of one file */
#define API_UI_MAX_TOTAL (16L << 20) /* bytes of all of them */
#define API_UI_MAX_DEPTH 3           /* subdirectories below the top */

struct api_ui;

/*
 * Read the files under dir. NULL with err: DRV_ENOENT when dir cannot be
 * opened, DRV_EINVAL when it holds too many or too large files.
 */
struct api_ui *api_ui_load(const char *dir, struct drv_err *err);
void api_ui_free(struct api_ui *u);
size_t api_ui_count(const struct api_ui *u);

/* Is a request's raw path one of the dashboard's ("/ui" or under "/ui/")? */
int api_ui_path(const char *path);

struct api_ui_reply {
    int status;         /* 200, 304, 301, or an error status with code and msg */
    const char *type;   /* Content-Type of body */
    const char *body;   /* points into the table (200), else NULL */
    size_t len;         /* bytes of body */
    char headers[1024]; /* extra header lines, each ending in CRLF */
    const char *code;   /* the API error code, for status >= 400 */
    char msg[160];      /* the error message */
};

/*
 * The reply to a request for raw path (api_ui_path is true) with method (enum
 * api_http_method) and the If-None-Match header (or NULL). u may be NULL (no
 * dashboard: 404).
 */
void api_ui_answer(const struct api_ui *u, int method, const char *path, const char *if_none_match,
                   struct api_ui_reply *out);

/* The Content-Security-Policy every dashboard reply carries. */
extern const char api_ui_csp[];

#endif
