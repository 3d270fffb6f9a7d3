/*
 * sleep: a plugin for tests and benchmarks only (docs/plugins.md).
 *
 * It reads the task JSON on standard input, sleeps, and succeeds or fails as
 * asked, so that tests can inject faults and benchmarks can give tasks a
 * duration. Parameters come from the service action's fields, then from the
 * cluster config's "sleep" object (the first that has the key wins):
 *
 *   duration_ms  how long to sleep (default 0)
 *   durations    {"<plan task id>": ms}: this task sleeps that long instead
 *   jitter_ms    a random extra of up to this long
 *   fail_rate    probability of failing (0..1)
 *   fail_on      {"node":..., "task":..., "service":..., "hardwaretype":...,
 *                "attempts": n}: fail
 *                the matching tasks (all given keys must match), only on
 *                attempts <= n when n is given
 *   hang         true: never exit (time-limit tests)
 *   hold_on      {"id"|"node"|"task"|"service"|"hardwaretype"|"attempts" as fail_on,
 *                "file": path}: the matching tasks wait, after their start, until path
 *                exists (a test's gate; a path never made holds them for ever)
 *   exclusive_dir  hold an exclusive flock on <dir>/<job>-<phase><index>.lock
 *                while running (the file names the holder's pid); if another
 *                attempt of the task holds it and runs, two attempts overlap:
 *                append "OVERLAP <taskId>" to <dir>/overlaps and fail; if the
 *                holder is stopped (SIGSTOP: frozen with its worker, a host
 *                suspend's stand-in), append "WAITED <taskId>" to <dir>/waits
 *                and wait for the lock (its guard kills it when it wakes)
 *   record_dir   append "<taskId> <task> <start ms> <end ms> <ok|failed> <cleanup>" to
 *                <dir>/runs.log when done (one write, O_APPEND); cleanup is the
 *                task's "cleanup" flag, 0 or 1
 *   echo         dotted paths in config, comma-separated ("provider.region"): print the
 *                strings there in the result's message, as a careless or hostile plugin would (the
 *                security tests' witness that a value reached the plugin opened)
 *   clear_secret true: fail unless config.provider.api_password reached the
 *                plugin opened (not "enc:..."): the worker's unsealing
 *
 * Provider tasks return what a provider would: create "provider-id", confirm
 * "hostname" and "ipaddresses". The same executable serves as the sleep
 * provider and the sleep automator (two descriptors).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"

static json_t *task;

/* Is the process whose pid the lock file names stopped (SIGSTOP: state T or t)? */
static bool holder_frozen(int fd)
{
    char buf[32] = {0}, path[64], stat[512];
    if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
        return false;
    long pid = strtol(buf, NULL, 10);
    if (pid <= 0)
        return false;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *rp = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold spaces */
    return rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
}

/* The parameter named key: the action's fields first, then config.cluster.sleep. */
static json_t *param(const char *key)
{
    json_t *config = json_object_get(task, "config");
    json_t *fields =
        json_object_get(json_object_get(json_object_get(config, "service"), "action"), "fields");
    json_t *v = json_object_get(fields, key);
    if (v)
        return v;
    return json_object_get(json_object_get(json_object_get(config, "cluster"), "sleep"), key);
}

static double num(const char *key, double dflt)
{
    json_t *v = param(key);
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_string(v))
        return atof(json_string_value(v));
    return dflt;
}

static const char *str(const char *key)
{
    return json_string_value(json_object_get(task, key));
}

/* Does the task match f (fail_on's or hold_on's keys)? */
static int matches(const json_t *f)
{
    if (!json_is_object(f))
        return 0;
    static const char *const keys[][2] = {
        {"node", "nodeId"}, {"task", "taskName"}, {"service", "service"}, {"id", "task"}};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *want = json_string_value(json_object_get(f, keys[i][0]));
        const char *have = str(keys[i][1]);
        if (want && (!have || strcmp(want, have) != 0))
            return 0;
    }
    const char *hw = json_string_value(json_object_get(f, "hardwaretype"));
    const char *node_hw =
        json_string_value(json_object_get(json_object_get(task, "config"), "hardwaretype"));
    if (hw && (!node_hw || strcmp(hw, node_hw) != 0))
        return 0;
    json_t *att = json_object_get(f, "attempts");
    if (json_is_integer(att) &&
        json_integer_value(json_object_get(task, "attempt")) > json_integer_value(att))
        return 0;
    return 1;
}

static int matches_fail_on(void)
{
    return matches(param("fail_on"));
}

/* hold_on: wait until its file exists, when the task matches. */
static void hold(void)
{
    json_t *h = param("hold_on");
    const char *file = json_string_value(json_object_get(h, "file"));
    if (!file || !matches(h))
        return;
    fprintf(stderr, "sleep: %s held until %s exists\n", str("task"), file);
    while (access(file, F_OK) != 0) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void append_line(const char *dir, const char *file, const char *line)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, strlen(line));
    (void)w;
    close(fd);
}

static void reply(int ok, json_t *result, const char *message)
{
    json_t *r = json_pack("{s:s, s:o, s:s}", "status", ok ? "ok" : "failed", "result",
                          result ? result : json_object(), "message", message);
    char *s = json_dumps(r, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(r);
}

int main(void)
{
    json_error_t je;
    task = json_loadf(stdin, 0, &je);
    if (!json_is_object(task)) {
        fprintf(stderr, "sleep: bad task JSON: %s\n", je.text);
        return 2;
    }
    const char *task_id = str("taskId") ? str("taskId") : "?";
    const char *name = str("taskName") ? str("taskName") : "?";
    long long start = clock_wall_ms(); /* wall: runs.log is read across processes */
    srand((unsigned)(start ^ getpid()));

    int lock_fd = -1;
    const char *xdir = json_string_value(param("exclusive_dir"));
    if (xdir) {
        /* taskId is job.index.attempt: the lock is per task, across attempts. */
        char key[256], path[4096];
        snprintf(key, sizeof(key), "%s", task_id);
        char *dot = strrchr(key, '.');
        if (dot)
            *dot = '\0';
        snprintf(path, sizeof(path), "%s/%s.lock", xdir, key);
        lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
            /* Held by an attempt that is frozen (a host-suspend stand-in: scripts/chaos
               suspend): it does not run, and its guard kills it when it wakes (its lease
               ran out): wait for that, as a retry on another host waits for a shared
               resource its sleeping holder cannot use. Held by one that runs: an overlap. */
            if (holder_frozen(lock_fd)) {
                char line[512];
                snprintf(line, sizeof(line), "WAITED %s %s\n", task_id, str("task"));
                append_line(xdir, "waits", line);
                flock(lock_fd, LOCK_EX);
                start = clock_wall_ms();
            } else {
                char line[512];
                snprintf(line, sizeof(line), "OVERLAP %s %s\n", task_id, str("task"));
                append_line(xdir, "overlaps", line);
                reply(0, NULL, "another attempt of this task is running");
                return 1;
            }
        }
        if (lock_fd >= 0) {
            /* The holder's pid, for a later attempt's holder_frozen. */
            char pid[32];
            int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
            if (ftruncate(lock_fd, 0) != 0 || pwrite(lock_fd, pid, (size_t)n, 0) != n)
                fprintf(stderr, "sleep: cannot write the lock's holder\n");
        }
    }
    fprintf(stderr, "sleep: %s %s on %s\n", name, str("task"), str("nodeId"));

    if (json_is_true(param("hang")))
        for (;;)
            pause();
    hold();
    long ms = (long)num("duration_ms", 0);
    json_t *per = json_object_get(param("durations"), str("task") ? str("task") : "");
    if (json_is_number(per))
        ms = (long)json_number_value(per);
    long jitter = (long)num("jitter_ms", 0);
    if (jitter > 0)
        ms += rand() % (jitter + 1);
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    double rate = num("fail_rate", 0);
    int fail = matches_fail_on() || (rate > 0 && (double)rand() / RAND_MAX < rate);
    if (json_is_true(param("clear_secret"))) {
        const char *pw = json_string_value(json_object_get(
            json_object_get(json_object_get(task, "config"), "provider"), "api_password"));
        if (!pw || strncmp(pw, "enc:", 4) == 0) {
            fprintf(stderr, "sleep: the provider's api_password did not arrive opened\n");
            fail = 1;
        }
    }

    json_t *result = json_object();
    const char *node = str("nodeId") ? str("nodeId") : "node";
    if (!fail && strcmp(name, "create") == 0) {
        char id[256];
        snprintf(id, sizeof(id), "sleep-%s-%s", str("clusterId") ? str("clusterId") : "0", node);
        json_object_set_new(result, "provider-id", json_string(id));
    } else if (!fail && strcmp(name, "confirm") == 0) {
        char host[256];
        snprintf(host, sizeof(host), "%s.sleep.invalid", node);
        json_object_set_new(result, "hostname", json_string(host));
        json_object_set_new(
            result, "ipaddresses",
            json_pack("{s:s, s:s}", "access_v4", "192.0.2.1", "bind_v4", "192.0.2.1"));
    }
    const char *rdir = json_string_value(param("record_dir"));
    if (rdir) {
        char line[1024];
        snprintf(line, sizeof(line), "%s %s %lld %lld %s %d\n", task_id, str("task"), start,
                 (long long)clock_wall_ms(), fail ? "failed" : "ok",
                 json_is_true(json_object_get(task, "cleanup")));
        append_line(rdir, "runs.log", line);
    }
    if (fail)
        fprintf(stderr, "sleep: failing %s as asked\n", str("task"));
    const char *echo = json_string_value(param("echo"));
    char said[2048] = "";
    if (echo) {
        char *paths = strdup(echo), *save = NULL;
        for (char *p = strtok_r(paths, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            json_t *at = json_object_get(task, "config");
            char *copy = strdup(p), *save2 = NULL;
            for (char *k = strtok_r(copy, ".", &save2); k && at; k = strtok_r(NULL, ".", &save2))
                at = json_object_get(at, k);
            free(copy);
            size_t n = strlen(said);
            snprintf(said + n, sizeof(said) - n, "%secho %s=%s", n ? " " : "", p,
                     json_is_string(at) ? json_string_value(at) : "?");
        }
        free(paths);
    }
    reply(!fail, result, *said ? said : fail ? "failed as asked (sleep plugin)" : "slept");
    if (lock_fd >= 0)
        close(lock_fd); /* releases the flock */
    return fail ? 1 : 0;
}
