/*
 * format: the format version of the records a job leaves behind (seed 004, rolling
 * upgrades; docs/operations.md "Rolling upgrade").
 *
 * A job's records carry a format version: its state znode and task log chunks ("format"),
 * its plans ("format_version"), its pinned inputs ("format") and its row
 * (jobs.format_version). A build writes up to DROVER_FORMAT_VERSION and reads that version
 * and the one before (DROVER_FORMAT_MIN_READ), so nodes of versions N and N+1 run side by
 * side while a fleet is upgraded.
 *
 * Which version a job is written in is decided once, when its first owner starts it: the
 * lowest DROVER_FORMAT_VERSION among the droverd members at that moment (each member znode
 * says its "format"; a member that says none is 1). Every later owner writes the job in
 * that version, whatever its own, so while one old node is left no job is written in a
 * version it cannot read, and once the last one is upgraded new jobs use the new version.
 *
 * Version 2 differs from version 1 only by its number for now: a build made with
 * -DDROVER_FORMAT_VERSION=2 is the rehearsal of an upgrade (the negotiation, mixed fleets,
 * reading both), and the first real change of a record fills in what 2 means.
 *
 * The messages between droverd and the workers (queue items, run records) have their own
 * version, TASKMSG_VERSION (taskmsg.h), with the same N reads N-1 rule.
 */
#ifndef DROVER_FORMAT_H
#define DROVER_FORMAT_H

#ifndef DROVER_FORMAT_VERSION
#define DROVER_FORMAT_VERSION 1
#endif

#define DROVER_FORMAT_MIN_READ (DROVER_FORMAT_VERSION > 1 ? DROVER_FORMAT_VERSION - 1 : 1)

/* 1 when a record of format f can be read by this build. */
#define DROVER_FORMAT_READABLE(f) ((f) >= DROVER_FORMAT_MIN_READ && (f) <= DROVER_FORMAT_VERSION)

#endif
