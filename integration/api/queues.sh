#!/usr/bin/env bash
# GET /v1/queues: the tenant's task queues with length and oldest item age,
# read from ZooKeeper; another tenant sees none of them.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
for t in acme globex; do api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER" > /dev/null; done
ADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
OTHER=$(body_of "$(api POST /v1/users '{"name":"olga","role":"admin","tenant":"globex"}' "$SUPER")" | jq -r .token)
TOKEN=$ADMIN
expect 200 "$(api GET /v1/queues)" '.queues == []' "no queues yet"

put="$DROVER_BUILD_DIR/integration/api/api_queue_put"
"$put" "$DROVER_ZK" acme ssh 3 || fail "queue_put acme ssh"
"$put" "$DROVER_ZK" acme chef 1 || fail "queue_put acme chef"
"$put" "$DROVER_ZK" globex ssh 2 || fail "queue_put globex ssh"
expect 200 "$(api GET /v1/queues)" \
  '.queues | map([.class, .length, .claimed]) == [["chef", 1, 0], ["ssh", 3, 0]]' "acme's queues"
expect 200 "$(api GET /v1/queues)" '.queues | all(.tenant == "acme" and .oldest_age_ms >= 0)' "ages"
expect 200 "$(api GET /v1/queues)" \
  '.queues | map([.class, .puts, .takes, .completes, .recommended_workers]) == [["chef", 1, 0, 0, 1], ["ssh", 3, 0, 0, 1]]' \
  "counters and the recommended worker count"
"$BIN/drover" queues --url "http://127.0.0.1:$PORT" --token "$ADMIN" > "$T/queues.txt" || fail "drover queues"
grep -q 'RECOMMENDED_WORKERS' "$T/queues.txt" && grep -Eq '^ssh +3 ' "$T/queues.txt" || fail "drover queues: $(cat "$T/queues.txt")"
expect 200 "$(api GET /v1/queues '' "$OTHER")" '.queues | map([.class, .length]) == [["ssh", 2]]' "globex's queues"
pass "queues: length, claims, oldest age, counters and recommendation per tenant and worker class (API and drover queues); tenants see only theirs"
