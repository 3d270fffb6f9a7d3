/*
 * jobwait: long-polling a job's summary (docs/api.md "Jobs":
 * GET /v1/jobs/{id}?tasks=none&wait=S&revision=R), for the dashboard's live
 * view and any watcher.
 *
 * Every summary reply carries "revision", a hash of the summary itself. A
 * request that names the revision it already has, and asks to wait, is held
 * until the summary differs, the job has ended, S seconds (1 to 25) have
 * passed, or the client has gone; it is then answered like any summary.
 * While held, the call re-reads the summary every JOBWAIT_STEP_MS on the
 * store's pool (the same tenant- and owner-filtered query as the first time),
 * so a held request costs one small query per step and no thread in between.
 *
 * Bounds: a held request keeps its slot of its user's and tenant's requests
 * in progress (api.max_requests_per_user, api.max_requests_per_tenant), so a
 * tenant cannot hold more than that; a connection holds at most one (HTTP/1.1
 * answers in order).
 *
 *   handler (pool): summary -> revision; wait asked and revision unchanged?
 *        yes -> on_loop = wait_loop           no -> reply
 *   wait_loop (loop): ended, deadline passed or client gone -> reply
 *                     else drop the summary, timer JOBWAIT_STEP_MS
 *   timer (loop): client gone -> reply (frees); else the handler again
 *
 * Threads: api__job_revision and the handler's part on a pool thread; the
 * rest on the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/evp.h>

#include "api_int.h"
#include "clock.h"
#include "hex.h"
#include "server.h"
#include "xalloc.h"

#define JOBWAIT_STEP_MS 500

struct job_wait {
    struct event *timer;
    long long deadline_ms;
};

void api__job_revision(json_t *job, char out[33])
{
    json_object_del(job, "revision");
    /* The summary is O(1) in the job's size (its task counts are kept at write time, and
       task_changes is its newest attempt number, one index probe: store.h), so is its hash. */
    char *text = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS);
    json_object_del(job, "task_changes");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    free(text);
    hex_encode(md, 16, out);
    json_object_set_new(job, "revision", json_string(out));
}

static bool final(const json_t *job)
{
    static const char *const done[] = {"succeeded", "rolled-back",    "cancelled",
                                       "failed",    "needs-operator", NULL};
    const char *st = json_string_value(json_object_get(job, "status"));
    for (const char *const *d = done; st && *d; d++)
        if (strcmp(st, *d) == 0)
            return true;
    return false;
}

static void wait_free(void *arg)
{
    struct job_wait *w = arg;
    if (w->timer)
        event_free(w->timer);
    free(w);
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct call *c = arg;
    if (!c->req->conn) { /* the client is gone: the reply only frees the call */
        api__reply(c);
        return;
    }
    api__dispatch(c);
}

/* The loop part: hold the call, or let it reply. */
static int wait_loop(struct call *c)
{
    struct job_wait *w = c->work;
    long long now = clock_mono_ms();
    if (final(c->out) || now >= w->deadline_ms || !c->req->conn)
        return 0;
    json_decref(c->out);
    c->out = NULL;
    if (!w->timer)
        w->timer = evtimer_new(api__base(c->api), on_step, c);
    long long left = w->deadline_ms - now;
    long ms = left < JOBWAIT_STEP_MS ? (long)left : JOBWAIT_STEP_MS;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(w->timer, &tv);
    return 1;
}

int api__job_wait(struct call *c, const char *revision, long wait_s)
{
    char rev[33];
    api__job_revision(c->out, rev);
    snprintf(c->etag, sizeof(c->etag), "%s", rev);
    c->on_loop = NULL;
    if (!revision || wait_s <= 0 || strcmp(revision, rev) != 0 || final(c->out))
        return 0;
    if (!c->work) { /* the first pass: the deadline counts from here */
        struct job_wait *w = xcalloc(1, sizeof(*w));
        w->deadline_ms = clock_mono_ms() + wait_s * 1000;
        c->work = w;
        c->work_free = wait_free;
    }
    c->on_loop = wait_loop;
    return 0;
}
