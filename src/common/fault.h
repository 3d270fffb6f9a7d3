/*
 * fault: the test hooks' one parser of DROVER_FAULT (docs/testing.md, "Fault hooks").
 *
 * DROVER_FAULT is a comma-separated list of hooks. A hook is a name, or a name and
 * its argument after a ':' or '=' ("crash-after-start", "gather-starts=6",
 * "zk-answer-lost:multi:/runs/:2"); each module looks up the hooks it owns and
 * ignores the others, so hooks of several modules can be set together. An
 * argument cannot hold a comma.
 *
 * fault_arg(name) returns a new string with the argument of the first hook called
 * name (the text after its ':' or '=', "" when none), or NULL when no hook has that
 * name or DROVER_FAULT is unset. The caller frees it.
 *
 * fault_every(arg, &n): a hook argument may end with ":N" (N decimal, 1..1000000),
 * the period of a hook that fires on the first matching event and every N-th after
 * (N 2: every other one); this cuts that suffix off arg (in place) and returns N, or
 * dflt when arg has no such suffix.
 *
 * Threads: reads the environment only (any thread, as getenv).
 */
#ifndef DROVER_FAULT_H
#define DROVER_FAULT_H

/* The argument of hook name in DROVER_FAULT, newly allocated; NULL when not set. */
char *fault_arg(const char *name);
/* In-string form for tests: the same, from spec instead of the environment. */
char *fault_arg_in(const char *spec, const char *name);
/* Cut a trailing ":N" off arg and return N (1..1000000), else dflt. */
unsigned fault_every(char *arg, unsigned dflt);

#endif
