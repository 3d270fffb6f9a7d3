/*
 * resources: the tenant's plugin resources on this worker (docs/worker.md
 * "Resources").
 *
 * Layout: <state_dir>/resources/<version>/ is a complete version, ready to
 * use, and <version>.sha256 its checksum; <version>.tmp is one being
 * unpacked, <version>.del one being removed. A version directory appears
 * only by rename(2) of its .tmp after the content's SHA-256 matched the
 * version's checksum and every file was written and fsynced, so a plugin
 * never sees a half-synced directory. The .sha256 file is written after
 * that rename: a directory without it (a crash between the two) is removed
 * at the next start. A version found here whose checksum is not the one a
 * job pinned (a tenant deleted and made again under the same name) is
 * replaced, never used.
 *
 * Life of a version here:
 *
 *   (absent) --announced or asked for--> FETCHING --GET /v1/resources/<v>,
 *      |                                   |        checksum, unpack, rename
 *      |                                   v
 *      |                                 READY --unused, older than the
 *      |                                   |      announced one, idle 10 min--> (removed)
 *      |                   fetch failed 5 times
 *      +<------------------ FAILED <--------+   (asked for again: FETCHING)
 *
 * Threads: everything here runs on the worker's loop but the checksum,
 * unpacking and removal, which run on a one-thread workpool. The fetch is
 * libevent's HTTP client on the loop. The ZooKeeper announcement
 * /drover/resources/<tenant> is read with a re-arming watcher (coord): it only
 * makes the worker fetch early; jobs pin their version, so a task that finds
 * its version missing asks for it (worker__res_acquire) and waits.
 *
 * A version in use (refs: tasks running with it) is never removed. Versions
 * are kept while a job may still want them: the announced one, and any used in
 * the last keep_ms (worker.resources_keep: a job between two tasks). A version removed too early
 * is fetched again on demand: slower, never wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "resbundle.h"
#include "workpool.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"
#define RES_TRIES 5
#define RES_GC_MS 30000 /* at most; less when keep_ms is shorter */
#define RES_MAX_BODY (64 << 20)
#define RES_HTTP_TIMEOUT_S 60

enum rv_state { RV_FETCHING, RV_READY, RV_FAILED };

struct rversion {
    struct rversion *next;
    struct worker__res *r;
    long v;
    char sha[65]; /* "" when not known */
    enum rv_state st;
    int refs;
    int tries;
    int64_t last_used; /* monotonic */
    char *dir;
    struct evhttp_connection *conn;
    struct event *retry_ev;
    bool unpacking;
};

struct worker__res {
    struct event_base *base;
    struct coord_session *zk;
    char *tenant, *root, *host, *prefix, *token;
    int port;
    struct coord_watcher *watch;
    long announced;
    char announced_tenant[24]; /* the tenant id of the announcement */
    struct rversion *vs;
    struct workpool *pool;
    struct event *gc_ev;
    int64_t keep_ms;
    uid_t own_uid; /* the plugin user's, or (uid_t)-1 */
    gid_t own_gid;
    void (*on_ready)(void *arg, long version, int rc, const char *msg);
    void *arg;
};

struct unpack {
    struct rversion *rv;
    struct worker__res *r;
    char *body;
    size_t len;
    char sha[65];
    char *tmp, *dir;
    int rc;
    struct drv_err err;
};

static struct rversion *find(struct worker__res *r, long v)
{
    for (struct rversion *rv = r->vs; rv; rv = rv->next)
        if (rv->v == v)
            return rv;
    return NULL;
}

static struct rversion *add(struct worker__res *r, long v)
{
    struct rversion *rv = xcalloc(1, sizeof(*rv));
    rv->r = r;
    rv->v = v;
    rv->dir = xasprintf("%s/%ld", r->root, v);
    rv->last_used = clock_mono_ms();
    rv->next = r->vs;
    r->vs = rv;
    return rv;
}

static void rv_free(struct rversion *rv)
{
    if (rv->conn)
        evhttp_connection_free(rv->conn);
    if (rv->retry_ev)
        event_free(rv->retry_ev);
    free(rv->dir);
    free(rv);
}

static void fetch(struct rversion *rv);
static void gc(struct worker__res *r);
static void remove_files(struct worker__res *r, struct rversion *rv);

static void ended(struct rversion *rv, int rc, const char *msg)
{
    struct worker__res *r = rv->r;
    if (rc == 0) {
        rv->st = RV_READY;
        rv->last_used = clock_mono_ms();
        log_info(MOD, "event=resources-ready version=%ld dir=%s", rv->v, rv->dir);
        r->on_ready(r->arg, rv->v, 0, NULL);
        return;
    }
    if (++rv->tries < RES_TRIES) {
        int ms = 500 << rv->tries;
        log_warn(MOD, "event=resources-fetch-failed version=%ld try=%d error=\"%s\" retry_ms=%d",
                 rv->v, rv->tries, msg, ms);
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        evtimer_add(rv->retry_ev, &tv);
        return;
    }
    log_error(MOD, "event=resources-fetch-gave-up version=%ld error=\"%s\"", rv->v, msg);
    rv->st = RV_FAILED;
    char m[600];
    snprintf(m, sizeof(m), "resources version %ld: %s", rv->v, msg);
    r->on_ready(r->arg, rv->v, DRV_EIO, m);
}

/* ---- checksum and unpacking (pool thread) ---------------------------------------------- */

static void unpack_work(void *arg)
{
    struct unpack *u = arg;
    char sha[65];
    resbundle_sha256_hex(u->body, u->len, sha);
    if (u->sha[0] && strcmp(sha, u->sha) != 0) {
        u->rc = drv_err_set(&u->err, DRV_EINVAL, 0, "checksum %s, expected %s", sha, u->sha);
        return;
    }
    json_error_t je;
    json_t *files = json_loadb(u->body, u->len, 0, &je);
    size_t total;
    u->rc = files ? resbundle_check(files, (size_t)-1, &total, &u->err)
                  : drv_err_set(&u->err, DRV_EINVAL, 0, "not JSON: %s", je.text);
    resbundle_rmtree(u->tmp); /* a crash's leftover */
    if (u->rc == 0)
        u->rc = resbundle_unpack(files, u->tmp, u->r->own_uid, u->r->own_gid, &u->err);
    json_decref(files);
    if (u->rc == 0 && rename(u->tmp, u->dir) != 0)
        u->rc = drv_err_set(&u->err, DRV_EIO, errno, "rename %s: %s", u->tmp, strerror(errno));
    if (u->rc) {
        resbundle_rmtree(u->tmp);
        return;
    }
    /* The checksum beside it (scan() trusts a directory only with it), then both durable. */
    char *side = xasprintf("%s.sha256", u->dir), *side_tmp = xasprintf("%s.sha256.tmp", u->dir);
    FILE *f = fopen(side_tmp, "w");
    if (f) {
        fprintf(f, "%s\n", sha);
        fflush(f);
        fsync(fileno(f));
        fclose(f);
        if (rename(side_tmp, side) != 0)
            unlink(side_tmp);
    }
    free(side);
    free(side_tmp);
    snprintf(u->sha, sizeof(u->sha), "%s", sha);
    char *parent = xstrdup(u->dir);
    *strrchr(parent, '/') = '\0';
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(parent);
}

static void unpack_done(void *arg, bool cancelled)
{
    struct unpack *u = arg;
    if (!cancelled) {
        u->rv->unpacking = false;
        if (u->rc == 0)
            snprintf(u->rv->sha, sizeof(u->rv->sha), "%s", u->sha);
        ended(u->rv, u->rc, u->rc ? u->err.msg : NULL);
        if (u->rc == 0)
            gc(u->r);
    }
    free(u->body);
    free(u->tmp);
    free(u->dir);
    free(u);
}

/* ---- the fetch (loop) ----------------------------------------------------------------- */

static void on_response(struct evhttp_request *req, void *arg)
{
    struct rversion *rv = arg;
    struct worker__res *r = rv->r;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (code != 200) {
        char m[128];
        snprintf(m, sizeof(m), code ? "GET answered %d" : "cannot reach the API", code);
        ended(rv, DRV_EIO, m);
        return; /* the connection is freed with the next try or the version */
    }
    struct evbuffer *b = evhttp_request_get_input_buffer(req);
    struct unpack *u = xcalloc(1, sizeof(*u));
    u->rv = rv;
    u->r = r;
    u->len = evbuffer_get_length(b);
    u->body = xmalloc(u->len + 1);
    evbuffer_remove(b, u->body, u->len);
    u->body[u->len] = '\0';
    snprintf(u->sha, sizeof(u->sha), "%s", rv->sha);
    u->dir = xstrdup(rv->dir);
    u->tmp = xasprintf("%s.tmp", rv->dir);
    rv->unpacking = true;
    if (workpool_submit(r->pool, unpack_work, unpack_done, u) != 0) {
        rv->unpacking = false;
        unpack_done(u, true);
        ended(rv, DRV_EAGAIN, "the unpacking queue is full");
    }
}

static void fetch(struct rversion *rv)
{
    struct worker__res *r = rv->r;
    rv->st = RV_FETCHING;
    if (rv->conn)
        evhttp_connection_free(rv->conn);
    rv->conn = evhttp_connection_base_new(r->base, NULL, r->host, (unsigned short)r->port);
    evhttp_connection_set_timeout(rv->conn, RES_HTTP_TIMEOUT_S);
    evhttp_connection_set_max_body_size(rv->conn, RES_MAX_BODY);
    struct evhttp_request *req = evhttp_request_new(on_response, rv);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char auth[300], path[512];
    snprintf(auth, sizeof(auth), "Bearer %s", r->token);
    evhttp_add_header(h, "Host", r->host);
    evhttp_add_header(h, "Authorization", auth);
    snprintf(path, sizeof(path), "%s/v1/resources/%ld", r->prefix, rv->v);
    log_info(MOD, "event=resources-fetch version=%ld try=%d", rv->v, rv->tries + 1);
    if (evhttp_make_request(rv->conn, req, EVHTTP_REQ_GET, path) != 0)
        ended(rv, DRV_EIO, "cannot send the request");
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fetch(arg);
}

static struct rversion *want(struct worker__res *r, long v, const char *sha)
{
    struct rversion *rv = find(r, v);
    if (rv && rv->st == RV_READY && rv->refs == 0 && sha && *sha && strcmp(sha, rv->sha) != 0) {
        /* Not the content the job pinned: made by another tenant of this name. */
        log_warn(MOD, "event=resources-replaced version=%ld had=%s want=%s", v, rv->sha, sha);
        remove_files(r, rv);
        rv->st = RV_FAILED; /* fetched again below */
        rv->sha[0] = '\0';
    }
    if (!rv)
        rv = add(r, v);
    if (sha && *sha && rv->st != RV_READY)
        snprintf(rv->sha, sizeof(rv->sha), "%s", sha);
    if (!rv->retry_ev)
        rv->retry_ev = evtimer_new(r->base, retry_cb, rv);
    if (rv->st == RV_FAILED || (rv->st == RV_FETCHING && !rv->conn && !rv->unpacking &&
                                !evtimer_pending(rv->retry_ev, NULL))) {
        rv->tries = 0;
        fetch(rv);
    }
    return rv;
}

/* ---- removal of old versions --------------------------------------------------------- */

static void rm_work(void *arg)
{
    resbundle_rmtree(arg);
}

static void rm_done(void *arg, bool cancelled)
{
    (void)cancelled;
    free(arg);
}

/* Take a ready version's files away (renamed at once, removed on the pool). */
static void remove_files(struct worker__res *r, struct rversion *rv)
{
    char *side = xasprintf("%s.sha256", rv->dir);
    unlink(side);
    free(side);
    char *del = xasprintf("%s.del", rv->dir);
    if (rename(rv->dir, del) == 0 && workpool_submit(r->pool, rm_work, rm_done, del) == 0)
        return;
    free(del); /* the next start removes it */
}

static void gc(struct worker__res *r)
{
    int64_t now = clock_mono_ms();
    long newest = r->announced;
    for (struct rversion *rv = r->vs; rv; rv = rv->next)
        if (rv->st == RV_READY && rv->v > newest)
            newest = rv->v;
    for (struct rversion **pp = &r->vs; *pp;) {
        struct rversion *rv = *pp;
        if (rv->st != RV_READY || rv->refs > 0 || rv->v >= newest ||
            now - rv->last_used < r->keep_ms) {
            pp = &rv->next;
            continue;
        }
        log_info(MOD, "event=resources-removed version=%ld", rv->v);
        remove_files(r, rv);
        *pp = rv->next;
        rv_free(rv);
    }
}

static void gc_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gc(arg);
}

/* ---- the announcement ----------------------------------------------------------------- */

static void on_announce(int rc, const char *data, size_t len, const struct coord_stat *st,
                        void *arg)
{
    (void)st;
    struct worker__res *r = arg;
    if (rc)
        return; /* not announced yet (ENOENT): the watcher waits for its creation */
    json_t *j = json_loadb(data ? data : "", data ? len : 0, 0, NULL);
    json_int_t v = json_integer_value(json_object_get(j, "version"));
    const char *sha = json_string_value(json_object_get(j, "sha256"));
    const char *tid = json_string_value(json_object_get(j, "tenant_id"));
    if (tid && strcmp(tid, r->announced_tenant) != 0) {
        /* A tenant of this name made again: its versions start anew. */
        snprintf(r->announced_tenant, sizeof(r->announced_tenant), "%s", tid);
        r->announced = 0;
    }
    if (v > r->announced) {
        log_info(MOD, "event=resources-announced version=%lld", (long long)v);
        r->announced = (long)v;
        want(r, (long)v, sha);
    }
    json_decref(j);
}

/* ---- public ------------------------------------------------------------------------ */

static int read_token(const char *path, char **out, struct drv_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return drv_err_set(err, DRV_EIO, errno, "worker.api_token_file \"%s\": %s", path,
                           strerror(errno));
    char buf[256] = "";
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, " \t\r\n")] = '\0';
    if (!buf[0])
        return drv_err_set(err, DRV_EINVAL, 0, "worker.api_token_file \"%s\": empty", path);
    *out = xstrdup(buf);
    return 0;
}

/* True when the version directory name under r->root belongs to the plugin user. */
static bool owned_by(const struct worker__res *r, const char *name)
{
    if (r->own_uid == (uid_t)-1)
        return true;
    char *p = xasprintf("%s/%s", r->root, name);
    struct stat st;
    bool yes = lstat(p, &st) == 0 && st.st_uid == r->own_uid && st.st_gid == r->own_gid;
    free(p);
    return yes;
}

/* Versions left by an earlier run: complete ones of the plugin user are kept, the rest
   removed. */
static void scan(struct worker__res *r)
{
    DIR *d = opendir(r->root);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.')
            continue;
        char sha[80] = "";
        if (v > 0 && *end == '\0') {
            char *side = xasprintf("%s/%s.sha256", r->root, e->d_name);
            FILE *f = fopen(side, "r");
            if (f) {
                if (!fgets(sha, sizeof(sha), f))
                    sha[0] = '\0';
                fclose(f);
            }
            free(side);
            sha[strcspn(sha, "\n")] = '\0';
        }
        if (v > 0 && *end == '\0' && strlen(sha) == 64 && !owned_by(r, e->d_name)) {
            /* Another user's (worker.plugin_uids set or changed): fetched again, its own. */
            sha[0] = '\0';
        }
        if (v > 0 && *end == '\0' && strlen(sha) == 64) {
            struct rversion *rv = add(r, v);
            rv->st = RV_READY;
            snprintf(rv->sha, sizeof(rv->sha), "%s", sha);
            rv->retry_ev = evtimer_new(r->base, retry_cb, rv);
        } else if (v > 0 && strcmp(end, ".sha256") == 0) {
            char *vd = xasprintf("%s/%ld", r->root, v);
            struct stat st;
            if (stat(vd, &st) != 0) {
                char *p = xasprintf("%s/%s", r->root, e->d_name);
                unlink(p); /* its directory is gone */
                free(p);
            }
            free(vd);
        } else {
            char *p = xasprintf("%s/%s", r->root, e->d_name);
            resbundle_rmtree(p);
            free(p);
        }
    }
    closedir(d);
}

struct worker__res *worker__res_new(struct event_base *base, struct coord_session *zk,
                                    const struct worker__res_opts *o, struct drv_err *err)
{
    struct evhttp_uri *u = evhttp_uri_parse(o->api_url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    if (!u || !scheme || strcmp(scheme, "http") != 0 || !evhttp_uri_get_host(u)) {
        if (u)
            evhttp_uri_free(u);
        drv_err_set(err, DRV_EINVAL, 0,
                    "worker.api_url \"%s\": expected http://host[:port][/prefix]", o->api_url);
        return NULL;
    }
    char *token = NULL;
    if (read_token(o->token_file, &token, err) != 0) {
        evhttp_uri_free(u);
        return NULL;
    }
    struct worker__res *r = xcalloc(1, sizeof(*r));
    r->base = base;
    r->zk = zk;
    r->token = token;
    r->tenant = xstrdup(o->tenant);
    r->host = xstrdup(evhttp_uri_get_host(u));
    r->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
    const char *path = evhttp_uri_get_path(u);
    r->prefix = xstrdup(path ? path : "");
    size_t pl = strlen(r->prefix);
    if (pl && r->prefix[pl - 1] == '/')
        r->prefix[pl - 1] = '\0';
    evhttp_uri_free(u);
    r->on_ready = o->on_ready;
    r->arg = o->arg;
    r->own_uid = o->own_uid;
    r->own_gid = o->own_gid;
    char *sd = xstrdup(o->state_dir);
    mkdir(sd, 0755);
    r->root = xasprintf("%s/resources", sd);
    free(sd);
    if (mkdir(r->root, 0755) != 0 && errno != EEXIST) {
        drv_err_set(err, DRV_EIO, errno, "mkdir %s: %s", r->root, strerror(errno));
        worker__res_free(r);
        return NULL;
    }
    scan(r);
    struct workpool_opts po = {.name = "resources", .threads = 1, .max_queued = 64, .nice = 5};
    r->pool = workpool_new(base, &po);
    r->gc_ev = event_new(base, -1, EV_PERSIST, gc_cb, r);
    r->keep_ms = o->keep_ms > 0 ? o->keep_ms : 10 * 60 * 1000;
    int64_t every = r->keep_ms < RES_GC_MS ? r->keep_ms : RES_GC_MS;
    struct timeval tv = {(time_t)(every / 1000), (suseconds_t)(every % 1000) * 1000};
    event_add(r->gc_ev, &tv);
    char *p = zkpath_resources(NULL, 0, r->tenant);
    r->watch = coord_watch_data(zk, p, on_announce, r);
    free(p);
    log_info(MOD, "event=resources-sync dir=%s api=%s", r->root, o->api_url);
    return r;
}

int worker__res_acquire(struct worker__res *r, long version, const char *sha, const char **dir)
{
    struct rversion *rv = find(r, version);
    bool other = rv && sha && *sha && strcmp(sha, rv->sha) != 0;
    if (rv && rv->st == RV_READY && other && rv->refs > 0)
        return DRV_EINVAL; /* in use with another content: wait for nothing, fail */
    if (rv && rv->st == RV_READY && !other) {
        rv->refs++;
        rv->last_used = clock_mono_ms();
        *dir = rv->dir;
        return 0;
    }
    want(r, version, sha);
    return DRV_EAGAIN;
}

void worker__res_release(struct worker__res *r, long version)
{
    struct rversion *rv = find(r, version);
    if (rv && rv->refs > 0) {
        rv->refs--;
        rv->last_used = clock_mono_ms();
    }
}

void worker__res_free(struct worker__res *r)
{
    if (!r)
        return;
    coord_watcher_free(r->watch);
    workpool_free(r->pool); /* completions cancelled: the versions are still here */
    if (r->gc_ev)
        event_free(r->gc_ev);
    while (r->vs) {
        struct rversion *rv = r->vs;
        r->vs = rv->next;
        rv_free(rv);
    }
    free(r->tenant);
    free(r->root);
    free(r->host);
    free(r->prefix);
    if (r->token)
        explicit_bzero(r->token, strlen(r->token));
    free(r->token);
    free(r);
}
