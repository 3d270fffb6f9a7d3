#!/usr/bin/env bash
# A slow link (docs/operations.md "When the network fails"): PostgreSQL's host and a worker's
# send at 256 kbit/s (scripts/netfault slow: a tbf qdisc on each one's egress) while jobs run.
# Everything is slower and nothing else changes: no session expires, every job succeeds,
# nothing runs twice or overlaps, nothing is left in the tree.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=6s
fleet 1 1
nf slow 256kbit pg > /dev/null
nf slow 256kbit worker-1 > /dev/null
[ "$(nf list | grep -c ' tc ')" = 2 ] || fail "the two tbf qdiscs are not in force: $(nf list)"
jobs=()
for i in 1 2 3; do jobs+=("$(long_job "c$i" 2 100)"); done
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
! grep -l 'event=session-expired' "$T"/droverd-*.log "$T"/worker-*.log 2> /dev/null ||
  fail "a session expired on a slow link"
nf heal > /dev/null
[ -z "$(nf list)" ] || fail "left after heal: $(nf list)"
pass "PostgreSQL and worker-1 at 256 kbit/s: ${#jobs[@]} jobs succeeded, no session expired, none ran twice or overlapped, the tree is clean"
