/*
 * check: when the whole-object invariant checks run (the SQLite habit: a check
 * function per state machine asserts every numbered invariant of its object at
 * its transitions, and aborts when one is broken).
 *
 * The checks are on when DROVER_CHECKS is defined (cmake -DDROVER_CHECKS=ON:
 * the build scripts/test runs every test with, real servers included), and in
 * every build without NDEBUG (Debug, the sanitizer build). Release and
 * RelWithDebInfo builds without DROVER_CHECKS (bench/run, packages) compile
 * them out: a check may cost time linear in the object (a job's tasks).
 *
 * Use:   #if DRV_CHECKS ... abort(); ... #endif    inside the check function.
 */
#ifndef DROVER_CHECK_H
#define DROVER_CHECK_H

#if defined(DROVER_CHECKS) || !defined(NDEBUG)
#define DRV_CHECKS 1
#else
#define DRV_CHECKS 0
#endif

#endif
