/*
 * zkpath: the paths of Drover's ZooKeeper tree, the code's one copy of
 * docs/zookeeper-tree.md (read them side by side).
 *
 * Every /drover path that droverd, drover-worker, the API and the plugins
 * build comes from here: a macro for each fixed path, a function for each
 * kind of path with names in it. Names are put in as given; the callers have
 * checked them (job ids are numbers, tenant, class and member names are
 * checked where they enter). Paths are absolute below the session's chroot.
 *
 * Output: every function writes the path into buf of n bytes, like snprintf,
 * and returns buf. With buf NULL it returns a new string instead (the caller
 * frees it; allocation failure aborts), for paths that are kept.
 *
 * Truncation: a path that does not fit in n bytes is never cut short, since a
 * cut path can name another znode ("/drover/jobs/4" for job 42): buf gets ""
 * (a path ZooKeeper refuses, so the request fails rather than touching another
 * znode) and the function returns NULL.
 *
 * The other direction: zkpath_classify says what a path is (the kind of path
 * that a function below builds, with the names in it), for the code that
 * decides by the path (coord_acl_grant: who may do what where).
 *
 * Pure functions, any thread.
 */
#ifndef DROVER_ZKPATH_H
#define DROVER_ZKPATH_H

#include <stdbool.h>
#include <stddef.h>

/* ---- fixed paths ---- */

#define ZKPATH_ROOT "/drover"
/* The groups (coord_member_join): one ephemeral znode per live process. */
#define ZKPATH_MEMBERS_DROVERD ZKPATH_ROOT "/members/droverd"
#define ZKPATH_MEMBERS_WORKER ZKPATH_ROOT "/members/worker"
/* The parent of every tenant's queues. */
#define ZKPATH_QUEUES ZKPATH_ROOT "/queues"
/* The parent of the ssh-pool claims: pools/<tenant>/<pool>, pools/_operator/<pool>. */
#define ZKPATH_POOLS ZKPATH_ROOT "/pools"
/* The parent of every job's subtree; every engine watches its children. */
#define ZKPATH_JOBS ZKPATH_ROOT "/jobs"
/* Made once per ZooKeeper incarnation (persistent, "{}", never deleted): its ctime names the
   incarnation the job locks' fencing tokens were taken in (docs/engine.md "A rebuilt
   ZooKeeper"). */
#define ZKPATH_ENSEMBLE ZKPATH_ROOT "/ensemble"

/* ---- control, locks, elections ---- */

/* /drover/control/<group>: the requests to the members of group ("droverd", "worker"). */
char *zkpath_control_group(char *buf, size_t n, const char *group);
/* /drover/control/<group>/<id>: the last operator's request to member id. */
char *zkpath_control(char *buf, size_t n, const char *group, const char *id);
/* /drover/members/<group>/<id>: member id of a group (coord_member_join's znode). */
char *zkpath_member(char *buf, size_t n, const char *group, const char *id);
/* /drover/elections/<duty>: the leader election of a duty. */
char *zkpath_election(char *buf, size_t n, const char *duty);
/* /drover/locks/jobs/<job>: the lock of a job's owner (a container znode). */
char *zkpath_job_lock(char *buf, size_t n, const char *job);

/* ---- queues, resources, pools ---- */

/* /drover/queues/<tenant>: the parent of the tenant's queues, one per class. */
char *zkpath_tenant_queues(char *buf, size_t n, const char *tenant);
/* /drover/queues/<tenant>/<class>: the queue of one tenant's worker class. */
char *zkpath_queue(char *buf, size_t n, const char *tenant, const char *cls);
/* /drover/resources/<tenant>: the announcement of the tenant's newest resources. */
char *zkpath_resources(char *buf, size_t n, const char *tenant);
/* /drover/pools/<pool>/claims: the hosts of an ssh-pool provider that nodes hold; pool is
   "<tenant>/<name>" (a tenant's own pool) or "_operator/<name>" (an operator's, granted). */
char *zkpath_pool_claims(char *buf, size_t n, const char *pool);
/* /drover/pools/<pool>/claims/<host>: one claimed host, host "<address>:<port>". */
char *zkpath_pool_claim(char *buf, size_t n, const char *pool, const char *host);
/* /drover/pools/<pool>/released: an operator's shared pool's release markers (pool
   "_operator/<name>"; the ssh-pool plugin makes them, droverd's pool janitor deletes them). */
char *zkpath_pool_released(char *buf, size_t n, const char *pool);

/* ---- a job's subtree ---- */

/* /drover/jobs/<job>: the API's announcement, the root of the job's subtree. */
char *zkpath_job(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/<child>, or /drover/jobs/<job>/<child>/<name> when name is not
 * NULL: any znode of the subtree by its names (the sweep, which lists them). */
char *zkpath_job_sub(char *buf, size_t n, const char *job, const char *child, const char *name);
/* /drover/jobs/<job>/control: a user's pause, resume or cancel. */
char *zkpath_job_control(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/state: the owner's state and sequencer. */
char *zkpath_job_state(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/ctx: the job's context for workers. */
char *zkpath_job_ctx(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/ctx/p<part>: one part of a context too big for one znode. */
char *zkpath_job_ctx_part(char *buf, size_t n, const char *job, size_t part);
/* /drover/jobs/<job>/nodes: the nodes map's parent. */
char *zkpath_job_nodes(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/nodes/n<k>: chunk k of the nodes map. */
char *zkpath_job_nodes_chunk(char *buf, size_t n, const char *job, size_t k);
/* /drover/jobs/<job>/log: the task log's parent. */
char *zkpath_job_log(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/log/<phase><k>: chunk k of the task log of a plan, phase 'f' or 'r'. */
char *zkpath_job_log_chunk(char *buf, size_t n, const char *job, char phase, size_t k);
/* /drover/jobs/<job>/runs: the run records' parent. */
char *zkpath_job_runs(char *buf, size_t n, const char *job);
/* /drover/jobs/<job>/runs/<name>: one delivery's run record (taskmsg_run_name). */
char *zkpath_job_run(char *buf, size_t n, const char *job, const char *name);

/* ---- the other direction: what a path is ---- */

/* The kinds of path the functions above build (names in brackets: which of a, b, c hold
 * them in struct zkpath_class). */
enum zkpath_kind {
    ZKPATH_OTHER = 0,       /* none of these: a fixed path, a parent, or not Drover's tree */
    ZKPATH_CONTROL_GROUP,   /* control/<group> (a) */
    ZKPATH_CONTROL,         /* control/<group>/<id> (a, b) */
    ZKPATH_ELECTION,        /* elections/<duty> (a) */
    ZKPATH_JOB_LOCK,        /* locks/jobs/<job> (a) */
    ZKPATH_MEMBER,          /* members/<group>/<id> (a, b) */
    ZKPATH_TENANT_QUEUES,   /* queues/<tenant> (a) */
    ZKPATH_QUEUE,           /* queues/<tenant>/<class> (a, b); its own znodes lie below */
    ZKPATH_RESOURCES,       /* resources/<tenant> (a) */
    ZKPATH_TENANT_POOLS,    /* pools/<owner> (a: a tenant, or "_operator") */
    ZKPATH_POOL,            /* pools/<owner>/<name> (a, b) */
    ZKPATH_POOL_CLAIMS,     /* pools/<owner>/<name>/claims (a, b) */
    ZKPATH_POOL_CLAIM,      /* pools/<owner>/<name>/claims/<host> (a, b, c) */
    ZKPATH_POOL_RELEASED,   /* pools/<owner>/<name>/released (a, b) */
    ZKPATH_JOB,             /* jobs/<job> (a) */
    ZKPATH_JOB_CONTROL,     /* jobs/<job>/control (a) */
    ZKPATH_JOB_STATE,       /* jobs/<job>/state (a) */
    ZKPATH_JOB_CTX,         /* jobs/<job>/ctx (a) */
    ZKPATH_JOB_CTX_PART,    /* jobs/<job>/ctx/p<k> (a, k) */
    ZKPATH_JOB_NODES,       /* jobs/<job>/nodes (a) */
    ZKPATH_JOB_NODES_CHUNK, /* jobs/<job>/nodes/n<k> (a, k) */
    ZKPATH_JOB_LOG,         /* jobs/<job>/log (a) */
    ZKPATH_JOB_LOG_CHUNK,   /* jobs/<job>/log/<phase><k> (a, phase 'f' or 'r', k) */
    ZKPATH_JOB_RUNS,        /* jobs/<job>/runs (a) */
    ZKPATH_JOB_RUN,         /* jobs/<job>/runs/<name> (a, b) */
};

/* A name in a path: a view into the classified path, not NUL-terminated. */
struct zkpath_name {
    const char *s;
    size_t len;
};

/* Names this long or longer are not classified (nor are empty ones): every name Drover
 * makes is shorter (tenants 63 characters, entities 128, job ids 20). */
#define ZKPATH_NAME_MAX 256

struct zkpath_class {
    enum zkpath_kind kind;
    struct zkpath_name a, b, c; /* the names, by kind (above); unused ones empty */
    char phase;                 /* ZKPATH_JOB_LOG_CHUNK */
    size_t k;                   /* ZKPATH_JOB_CTX_PART, _NODES_CHUNK, _LOG_CHUNK */
    /* What follows the kind's path, after its '/' (a queue's "items/x", a job's child
       zkpath has no kind for), or NULL: the path is exactly the kind's. */
    const char *below;
};

/*
 * What path is: the deepest kind whose path it is or lies below, its names as views into
 * path (which must outlive *out). ZKPATH_OTHER (below NULL) for any path outside those
 * kinds: not below /drover, an empty name (a '/' doubled or at the end), a name of
 * ZKPATH_NAME_MAX characters or more. A number (k) is decimal without a leading zero, as
 * the functions above write it; another name there is not that kind's (a "ctx/px" is below
 * ctx). Returns out->kind.
 */
enum zkpath_kind zkpath_classify(const char *path, struct zkpath_class *out);
/* Name v as a string into buf of n bytes (buf), or "" and NULL when it does not fit. */
char *zkpath_name_copy(struct zkpath_name v, char *buf, size_t n);

#endif
