#!/usr/bin/env bash
# Three droverd starting together on an empty database: exactly one creates
# the superadmin and writes the token file; every node serves the whole API
# (a write through one is read through the others); /v1/members lists the
# three and names one ring owner per unfinished job; a malformed request on
# one connection does not disturb the others.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

ports=()
for n in 1 2 3; do
  ports[n]=$(free_port)
  write_droverd_conf "droverd-$n" "${ports[$n]}" "secrets.key_file = $KEYFILE" \
    "api.bootstrap_token_file = $TOKFILE"
done
for n in 1 2 3; do start_proc "droverd-$n" "$BIN/droverd"; done
for n in 1 2 3; do wait_ready "droverd-$n" "${ports[$n]}" 60; done
created=$(cat "$T"/droverd-*.log | grep -c 'event=superadmin_created' || true)
[ "$created" = 1 ] || fail "$created nodes created a superadmin"
[ "$(psql_q "SELECT count(*) FROM users WHERE role = 'superadmin'")" = 1 ] || fail "superadmins in the database"
SUPER=$(cat "$TOKFILE")
pass "three nodes started together: one superadmin, one token file"

PORT=${ports[1]}
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant through node 1"
PORT=${ports[2]}
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
catalogue_json "$FIXTURES" > "$T/catalogue.json"
expect 200 "$(api POST /v1/import "@$T/catalogue.json")" '' "import through node 2"
PORT=${ports[3]}
r=$(api POST /v1/clusters '{"name":"c1","template":"lamp","nodes":2,"provider":"rackspace"}')
expect 202 "$r" '' "cluster through node 3"
JID=$(body_of "$r" | jq -r .job.id)
for n in 1 2 3; do
  PORT=${ports[$n]}
  expect 200 "$(api GET /v1/clusters)" '.items | map(.name) == ["c1"]' "clusters through node $n"
  expect 200 "$(api GET "/v1/jobs/$JID")" '.status == "pending" or .status == "running"' "job through node $n"
done
pass "every node serves the whole API"

PORT=${ports[1]}
members_are() { [ "$(body_of "$(api GET /v1/members)" | jq '.members | length')" = "$1" ]; }
poll_until -e 0.2 15 members_are 3 || fail "members: $(api GET /v1/members)"
owners=$(for n in 1 2 3; do PORT=${ports[$n]}; body_of "$(api GET /v1/members)" | jq -r --arg j "$JID" '.jobs[] | select(.id == $j) | .owner'; done | sort -u)
[ "$(echo "$owners" | wc -l)" = 1 ] && [[ $owners == droverd-* ]] || fail "ring owners of job $JID: $owners"
pass "/v1/members: three members; every node names the same owner ($owners) for job $JID"

# A malformed request gets 400 and closes; the node serves the next client.
reply=$(printf 'NONSENSE\r\n\r\n' | timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/${ports[1]}; cat >&3; cat <&3" || true)
echo "$reply" | head -n 1 | grep -q '^HTTP/1.1 400' || fail "malformed request line: $(echo "$reply" | head -n 1)"
expect 200 "$(api GET /v1/whoami)" '.role == "admin"' "after a malformed request"
pass "a malformed request gets 400 and disturbs nobody"
