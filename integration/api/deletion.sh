#!/usr/bin/env bash
# Deleting users and tenants (issue 14), and what happens to their clusters:
# - a deleted user's tokens stop at once (on this node; elsewhere within
#   api.token_cache_ttl); its clusters stay with the tenant, which its
#   admins keep seeing and operating; a new user of the same name does not
#   inherit them;
# - a tenant is not deleted while it has live clusters (their machines must be
#   deleted by delete jobs first: 409); once they are gone, the tenant, its
#   users and its entities are marked deleted, its tokens stop, and the name
#   may be used again for a tenant that sees nothing of the old one.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
start_noop_worker worker-a acme
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
ADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
BOB=$(body_of "$(api POST /v1/users '{"name":"bob","role":"user"}' "$ADMIN")" | jq -r .token)
CAROL=$(body_of "$(api POST /v1/users '{"name":"carol","role":"user"}' "$ADMIN")" | jq -r .token)
TOKEN=$ADMIN
catalogue_json "$FIXTURES" > "$T/catalogue.json"
expect 200 "$(api POST /v1/import "@$T/catalogue.json")" '' "import"
r=$(api POST /v1/clusters '{"name":"web","template":"lamp","nodes":2,"provider":"rackspace"}' "$BOB")
expect 202 "$r" '.cluster.owner == "bob"' "bob's cluster"
CID=$(body_of "$r" | jq -r .cluster.id)
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded "$BOB"
expect 200 "$(api GET /v1/whoami '' "$BOB")" '.user == "bob"' "bob's token (now cached)"

# Users.
expect 403 "$(api DELETE /v1/users/carol '' "$BOB")" '.error.code == "forbidden"' "a user deletes a user"
expect 409 "$(api DELETE /v1/users/alice '' "$ADMIN")" '.error.code == "conflict"' "an admin deletes itself"
expect 404 "$(api DELETE /v1/users/nobody '' "$ADMIN")" '.error.code == "not-found"' "no such user"
expect 204 "$(api DELETE /v1/users/bob '' "$ADMIN")" '' "alice deletes bob"
expect 401 "$(api GET /v1/whoami '' "$BOB")" '.error.code == "unauthenticated"' "bob's token, at once"
expect 404 "$(api DELETE /v1/users/bob '' "$ADMIN")" '' "bob twice"
expect 200 "$(api GET /v1/users)" '.items | map(.name) == ["alice", "carol"]' "users without bob"
expect 200 "$(api GET "/v1/clusters/$CID")" '.owner == "bob" and .owner_deleted == true and .status == "active"' "bob's cluster stays"
r=$(api POST "/v1/clusters/$CID/stop" '{}')
expect 202 "$r" '.job.operation == "stop"' "the admin operates bob's cluster"
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
[ "$(psql_q "SELECT count(*) FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.name = 'bob' AND t.revoked_at IS NULL")" = 0 ] ||
  fail "bob's tokens are not revoked"
[ "$(psql_q "SELECT count(*) FROM audit_log WHERE action = 'user.delete'")" = 1 ] || fail "no audit entry"
r=$(api POST /v1/users '{"name":"bob","role":"user"}')
expect 201 "$r" '.user.name == "bob"' "a new bob"
BOB2=$(body_of "$r" | jq -r .token)
expect 404 "$(api GET "/v1/clusters/$CID" '' "$BOB2")" '' "the new bob does not inherit the cluster"
expect 200 "$(api GET /v1/clusters '' "$BOB2")" '.items == []' "the new bob's clusters"
pass "user deleted: tokens end, clusters stay with the tenant's admins, the name is free again"

# Tenants.
expect 409 "$(api DELETE /v1/tenants/acme '' "$SUPER")" '.error.code == "conflict" and (.error.message | test("1 live cluster"))' "a tenant with a live cluster"
stop_worker worker-a # the delete job waits for a worker: the tenant is busy meanwhile
r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '.job.operation == "delete"' "delete the cluster (a job)"
expect 409 "$(api DELETE /v1/tenants/acme '' "$SUPER")" '.error.code == "conflict"' "while its delete job runs"
expect 200 "$(api GET /v1/whoami)" '' "alice still works"
start_noop_worker worker-a acme
api_wait_job "$(body_of "$r" | jq -r .job.id)" succeeded
expect 404 "$(api GET "/v1/clusters/$CID")" '' "the engine deleted the cluster"
expect 403 "$(api DELETE /v1/tenants/acme)" '.error.code == "forbidden"' "an admin deletes its tenant"
expect 204 "$(api DELETE /v1/tenants/acme '' "$SUPER")" '' "the superadmin deletes acme"
for t in "$ADMIN" "$CAROL" "$BOB2"; do
  expect 401 "$(api GET /v1/whoami '' "$t")" '' "a token of acme"
done
expect 200 "$(api GET /v1/tenants '' "$SUPER")" '.items == []' "tenants without acme"
expect 404 "$(api DELETE /v1/tenants/acme '' "$SUPER")" '' "acme twice"
[ "$(psql_q "SELECT count(*) FROM entities e JOIN tenants t ON t.id = e.tenant_id WHERE t.name = 'acme' AND e.deleted_at IS NULL")" = 0 ] ||
  fail "acme's entities are live"
[ "$(psql_q "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE t.name = 'acme'")" -gt 0 ] ||
  fail "acme's job history is gone"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "a new acme"
NEWADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
expect 200 "$(api GET /v1/clustertemplates '' "$NEWADMIN")" '.items == []' "the new acme sees no old entity"
expect 200 "$(api GET /v1/clusters '' "$NEWADMIN")" '.items == []' "nor old clusters"
pass "tenant deleted only without live clusters; then its tokens end, history stays, the name is free"
