/*
 * itest_list: every coord integration test and helper subcommand, once (an X-macro list, as
 * libuv's test/test-list.h). Both sides read it:
 *
 *   - coord_itest.c includes it to build its table of subcommands;
 *   - integration/coord/CMakeLists.txt parses it (file(STRINGS) and a regex) and adds one ctest
 *     test, coord_NAME, per ITEST and ITEST_VARIANT line, in the order of this file.
 *
 * So a test is added here and nowhere else. One entry per line, in exactly these shapes (CMake
 * fails on a line it cannot read):
 *
 *   ITEST("name", fn)                    test NAME runs int fn(void) (0: passed); ctest runs
 *                                        "coord_itest NAME" under scripts/with-stack --no-pg
 *   ITEST_VARIANT("name", "of", "args")  a ctest test that runs test OF again under
 *                                        scripts/with-stack --no-pg ARGS (not a subcommand)
 *   ITEST_HELPER("name", fn, nargs)      a subcommand the tests start as a child process:
 *                                        int fn(char **args), args[0..nargs-1] from the command
 *                                        line; no ctest test
 *
 * Each test's own description is at the top of the file that has it.
 */

/* The first tests of src/coord (coord_itest.c). */
ITEST("members", t_members)
ITEST("lock", t_lock)
ITEST("lock-expiry", t_lock_expiry)
ITEST("lock-partition", t_lock_partition)
ITEST("election", t_election)
ITEST("chroot-auth", t_chroot_auth)
ITEST("queue", t_queue)
ITEST("queue-backlog", t_queue_backlog)
ITEST("queue-kill", t_queue_kill)
ITEST("connloss", t_connloss)
ITEST("restart", t_restart)

/* One test per defect of issue 10 (itest_faults.c, itest_session.c). */
ITEST("claim-late-release", t_claim_late_release)
ITEST("claim-late-complete", t_claim_late_complete)
ITEST("members-partial", t_members_partial)
ITEST("txn-too-large", t_txn_too_large)
ITEST("session-restart-retry", t_session_restart_retry)
ITEST("queue-close-claims", t_queue_close_claims)
ITEST("queue-open-retry", t_queue_open_retry)
ITEST("put-exactly-once", t_put_exactly_once)
ITEST("prefix-collision", t_prefix_collision)
ITEST("lock-silent-partition", t_lock_silent_partition)
ITEST("session-free-in-callback", t_session_free_in_callback)

/* The recipes the engine needs (itest_recipes.c, itest_queue.c). */
ITEST("watch", t_watch)
ITEST("upsert", t_upsert)
ITEST("lock-release-done", t_lock_release_done)
ITEST("lock-orphan", t_lock_orphan)
ITEST("many-locks", t_many_locks)
ITEST("queue-keyed", t_queue_keyed)
ITEST("queue-txn", t_queue_txn)
ITEST("queue-gather", t_queue_gather)
ITEST("queue-pipelined", t_queue_pipelined)
ITEST("claim-lost", t_claim_lost)
ITEST("queue-skip", t_queue_skip)
ITEST("queue-paced", t_queue_paced)

/* Delivery without a herd, issue 37 (itest_herd.c). */
ITEST("queue-herd", t_queue_herd)
ITEST("queue-homes-move", t_queue_homes_move)
ITEST("queue-steal", t_queue_steal)

/* What a fleet costs as it grows, issue 37 (itest_fleet.c). */
ITEST("members-cost", t_members_cost)
ITEST("slots", t_slots)
ITEST("slots-suspect", t_slots_suspect)
ITEST("slots-lost", t_slots_lost)

/* Lost answers made by coord's test hook, issue 33 (itest_lost.c). */
ITEST("answer-lost", t_answer_lost)
ITEST("queue-txn-lost", t_queue_txn_lost)
ITEST("queue-answers-lost", t_queue_answers_lost)

/* Requests a closed handle never answered, issue 34 (itest_abandon.c). */
ITEST("abandoned", t_abandoned)
ITEST("lock-release-closed", t_lock_release_closed)

/* The restart test against a three-server ensemble, whose leader it kills. */
ITEST_VARIANT("restart-ensemble", "restart", "--ensemble")

/* Child processes of the lock and queue-kill tests (coord_itest.c). */
ITEST_HELPER("lock-worker", t_lock_worker, 1)
ITEST_HELPER("queue-consumer", t_queue_consumer, 2)
