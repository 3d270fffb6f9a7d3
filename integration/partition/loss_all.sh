#!/usr/bin/env bash
# 5% random loss on every link (docs/operations.md "When the network fails"): every host drops
# one packet in twenty of what it sends (scripts/netfault loss 5 all: nft numgen random),
# ZooKeeper's quorum links included, while jobs run on two droverd and two workers. TCP
# retransmits; no session expires (the clients' pings have the session timeout to get
# through); every job succeeds, nothing runs twice or overlaps, nothing is left in the tree.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"
. "$(dirname "$0")/partition_lib.sh"

SESSION=6s
fleet 2 2
nf loss 5 all > /dev/null
pass "5% loss on every link: $(nf list | wc -l) rules"
jobs=()
for i in 1 2 3 4; do jobs+=("$(long_job "c$i" 2 200)"); done
# shellcheck disable=SC2068 # a list of ids
the_end ${jobs[@]}
expired=$(grep -l "event=session-expired" "$T"/droverd-*.log "$T"/worker-*.log 2> /dev/null | wc -l || true)
nf heal > /dev/null
pass "under 5% loss on every link: ${#jobs[@]} jobs succeeded, none ran twice or overlapped, the tree is clean ($expired processes saw their session expire)"
