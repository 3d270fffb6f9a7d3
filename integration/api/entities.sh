#!/usr/bin/env bash
# The admin side of the API against real PostgreSQL and ZooKeeper: the first
# superadmin token, tenants and users, CRUD of every entity kind, import and
# export of the whole Coopr catalogue, roles (a user cannot write admin
# entities), sealed provider secrets, and no token in clear in the database.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
[ "$(stat -c %a "$TOKFILE")" = 600 ] || fail "bootstrap token file mode is $(stat -c %a "$TOKFILE")"
grep -qE '^drv_[0-9a-f]{16}_[0-9a-f]{64}$' "$TOKFILE" || fail "bootstrap token file: $(cat "$TOKFILE")"
expect 200 "$(api GET /v1/whoami '' "$SUPER")" '.role == "superadmin"' "whoami superadmin"
pass "first superadmin token written once, mode 600"

# Authentication.
expect 401 "$(api GET /v1/whoami '' '')" '.error.code == "unauthenticated"' "no token"
expect 401 "$(api GET /v1/whoami '' 'drv_0000000000000000_0000000000000000000000000000000000000000000000000000000000000000')" \
  '.error.code == "unauthenticated"' "unknown token"
# The secret with its last digit changed (to 0, or to 1 when it is 0: never the same token).
wrong=${SUPER%?}0
[ "$wrong" != "$SUPER" ] || wrong=${SUPER%?}1
expect 401 "$(api GET /v1/whoami '' "$wrong")" '.error.code == "unauthenticated"' "wrong secret"
pass "missing, unknown and wrong tokens get 401"

# Tenants and users.
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '.name == "acme"' "create tenant"
expect 409 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '.error.code == "conflict"' "tenant twice"
expect 400 "$(api POST /v1/tenants '{"name":"Bad Name"}' "$SUPER")" '.error.field == "name"' "bad tenant name"
r=$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")
expect 201 "$r" '.user.role == "admin"' "create admin"
ADMIN=$(body_of "$r" | jq -r .token)
r=$(api POST /v1/users '{"name":"bob","role":"user"}' "$ADMIN")
expect 201 "$r" '.user.tenant == "acme"' "admin creates user"
USER=$(body_of "$r" | jq -r .token)
expect 403 "$(api POST /v1/tenants '{"name":"evil"}' "$ADMIN")" '.error.code == "forbidden"' "admin creates tenant"
expect 403 "$(api GET /v1/providers '' "$SUPER")" '.error.code == "forbidden"' "superadmin reads entities"
pass "tenants and users: superadmin -> admin -> user"

# CRUD of every kind, with a small valid entity of each.
TOKEN=$ADMIN
declare -A ent=(
  [providers]='{"name":"p1","description":"d","providertype":"aws","provisioner":{"region":"x"}}'
  [hardwaretypes]='{"name":"h1","description":"d","providermap":{"p1":{"flavor":"m1.small"}}}'
  [imagetypes]='{"name":"i1","description":"d","providermap":{"p1":{"image":"ami-1"}}}'
  [services]='{"name":"s1","description":"d","dependencies":{"runtime":{"requires":[]}},"provisioner":{"actions":{}}}'
  [partialtemplates]='{"name":"pt1","description":"d","defaults":{"services":["s1"]}}'
  [clustertemplates]='{"name":"t1","description":"d","compatibility":{"services":["s1"]},"defaults":{"services":["s1"],"provider":"p1","hardwaretype":"h1","imagetype":"i1"}}'
)
for kind in providers hardwaretypes imagetypes services partialtemplates clustertemplates; do
  b=${ent[$kind]}
  name=$(echo "$b" | jq -r .name)
  expect 201 "$(api POST "/v1/$kind" "$b")" ".name == \"$name\"" "create $kind"
  expect 409 "$(api POST "/v1/$kind" "$b")" '.error.code == "conflict"' "create $kind twice"
  expect 200 "$(api GET "/v1/$kind/$name")" ".name == \"$name\"" "get $kind"
  expect 200 "$(api GET "/v1/$kind")" ".items | map(.name) | index(\"$name\") != null" "list $kind"
  b2=$(echo "$b" | jq -c '.description = "second"')
  expect 200 "$(api PUT "/v1/$kind/$name" "$b2")" '.description == "second"' "replace $kind"
  expect 200 "$(api GET "/v1/$kind/$name")" '.description == "second"' "get replaced $kind"
  expect 400 "$(api PUT "/v1/$kind/$name" "$(echo "$b" | jq -c '.name = "other"')")" \
    '.error.field == "name"' "replace $kind with another name"
  expect 404 "$(api PUT "/v1/$kind/nope" "$(echo "$b" | jq -c '.name = "nope"')")" \
    '.error.code == "not-found"' "replace missing $kind"
  v=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/$kind/$name" |
    tr -d '\r' | awk -F': ' 'tolower($1) == "x-drover-version" {print $2}')
  [ "$v" = 2 ] || fail "$kind $name: X-Drover-Version $v after a replace"
done
expect 204 "$(api DELETE /v1/partialtemplates/pt1)" '' "delete"
expect 404 "$(api GET /v1/partialtemplates/pt1)" '.error.code == "not-found"' "get deleted"
expect 404 "$(api DELETE /v1/partialtemplates/pt1)" '.error.code == "not-found"' "delete twice"
expect 201 "$(api POST /v1/partialtemplates "${ent[partialtemplates]}")" '' "create again after delete"
[ "$(psql_q "SELECT max(version) FROM entities WHERE kind = 'partialtemplate' AND name = 'pt1'")" = 3 ] ||
  fail "re-created entity does not continue the versions"
expect 404 "$(api GET /v1/gizmos)" '.error.code == "not-found"' "unknown kind"
expect 405 "$(api PUT /v1/providers)" '.error.code == "method-not-allowed"' "PUT on a collection"
pass "CRUD of providers, hardwaretypes, imagetypes, services, partial and cluster templates"

# Validation of entities: the model codec names the field.
expect 400 "$(api POST /v1/services '{"name":"s2","dependencies":{"runtime":{"requires":"x"}}}')" \
  '.error.code == "invalid" and (.error.field | test("dependencies"))' "service with a wrong type"
expect 400 "$(api POST /v1/services '{"description":"no name"}')" '.error.field == "name"' "no name"
expect 400 "$(api POST /v1/services '{"name":"s2",')" '.error.code == "malformed"' "malformed JSON"
expect 400 "$(api POST /v1/services '[1,2]')" '.error.code == "malformed"' "not an object"

# Roles: a user reads templates, never writes admin entities, never reads providers.
expect 200 "$(api GET /v1/clustertemplates '' "$USER")" '.items | length == 1' "user lists templates"
expect 403 "$(api POST /v1/services '{"name":"s9"}' "$USER")" '.error.code == "forbidden"' "user creates"
expect 403 "$(api PUT /v1/services/s1 "${ent[services]}" "$USER")" '.error.code == "forbidden"' "user replaces"
expect 403 "$(api DELETE /v1/services/s1 '' "$USER")" '.error.code == "forbidden"' "user deletes"
expect 403 "$(api GET /v1/providers '' "$USER")" '.error.code == "forbidden"' "user reads providers"
expect 403 "$(api POST /v1/import '{}' "$USER")" '.error.code == "forbidden"' "user imports"
pass "a user reads templates and cannot write admin entities"

# Sensitive provider fields are sealed at rest and never returned.
expect 201 "$(api POST /v1/providers '{"name":"p2","providertype":"aws","provisioner":{"api_password":"hunter2-secret","region":"r"}}')" \
  '.provisioner.api_password == "********" and .provisioner.region == "r"' "provider with a password"
psql_q "SELECT body::text FROM entities WHERE name = 'p2'" | grep -q 'hunter2' &&
  fail "a provider password is stored in clear"
psql_q "SELECT body->'provisioner'->>'api_password' FROM entities WHERE name = 'p2'" | grep -q '^enc:v2:' ||
  fail "the provider password is not sealed"
expect 200 "$(api PUT /v1/providers/p2 '{"name":"p2","providertype":"aws","provisioner":{"api_password":"********","region":"r2"}}')" \
  '.provisioner.api_password == "********"' "replace keeping the password"
[ "$(psql_q "SELECT count(DISTINCT body->'provisioner'->>'api_password') FROM entities WHERE name = 'p2'")" = 1 ] ||
  fail "\"********\" did not keep the stored password"
grep -rq hunter2 "$T"/droverd-a.log && fail "a password reached the log"
expect 201 "$(api POST /v1/providers '{"name":"p3","providertype":"x","sensitive":["login"],"provisioner":{"login":"opensesame"}}')" \
  '.provisioner.login == "********"' "provider marking a field sensitive"
psql_q "SELECT body::text FROM entities WHERE name = 'p3'" | grep -q opensesame && fail "a marked field is stored in clear"
expect 400 "$(api POST /v1/providers '{"name":"p4","sensitive":"login","provisioner":{}}')" '.error.field == "sensitive"' "bad sensitive list"
pass "sensitive provider fields sealed (AES-GCM), shown as ********, kept on replace"

# Import the whole Coopr catalogue, then export it.
catalogue_json "$FIXTURES" > "$T/catalogue.json"
want=$(jq -c '{providers: (.providers|length), hardwaretypes: (.hardwaretypes|length), imagetypes: (.imagetypes|length), services: (.services|length), clustertemplates: (.clustertemplates|length)}' "$T/catalogue.json")
r=$(api POST /v1/import "@$T/catalogue.json")
expect 200 "$r" ".imported.services == $(jq '.services|length' "$T/catalogue.json")" "import catalogue"
r=$(api GET /v1/export)
expect 200 "$r" ".clustertemplates | map(.name) | index(\"hadoop-distributed\") != null" "export"
got=$(body_of "$r" | jq -c --argjson w "$want" '{providers: [.providers[] | select(.name | IN("p1","p2","p3") | not)] | length, hardwaretypes: ([.hardwaretypes[] | select(.name != "h1")] | length), imagetypes: ([.imagetypes[] | select(.name != "i1")] | length), services: ([.services[] | select(.name != "s1")] | length), clustertemplates: ([.clustertemplates[] | select(.name != "t1")] | length)}')
[ "$got" = "$want" ] || fail "export holds $got, the catalogue $want"
pass "import of the whole catalogue: $want; export gives it back"

# A bad import writes nothing.
before=$(psql_q "SELECT count(*) FROM entities")
bad=$(jq -c '.services += [{"name": "broken", "dependencies": {"runtime": {"requires": 5}}}]' "$T/catalogue.json")
expect 400 "$(api POST /v1/import "$bad")" '.error.field | startswith("services[")' "import with a bad entity"
[ "$(psql_q "SELECT count(*) FROM entities")" = "$before" ] || fail "a failed import wrote rows"
pass "a bad import is refused whole, naming the entity, and writes nothing"

# No token in clear anywhere in the database.
dump=$(pg_dump --data-only "$DROVER_PG" 2>/dev/null || true)
[ -n "$dump" ] || fail "pg_dump gave nothing"
for t in "$SUPER" "$ADMIN" "$USER"; do
  secret=${t##*_}
  grep -qF "$secret" <<< "$dump" && fail "a token secret is in the database"
done
pass "no token (nor its secret) in clear in the database (pg_dump checked)"
[ "$(psql_q "SELECT count(*) FROM audit_log WHERE actor = 'alice'")" -gt 10 ] || fail "audit log is thin"
pass "audit log records the admin's writes"

# Revoking a token; reading the audit log.
r=$(api POST /v1/tokens '{}' "$USER")
expect 201 "$r" '.id | length == 16' "new token"
T2=$(body_of "$r" | jq -r .token)
T2ID=$(body_of "$r" | jq -r .id)
expect 200 "$(api GET /v1/whoami '' "$T2")" '.user == "bob"' "second token works"
expect 404 "$(api DELETE "/v1/tokens/${ADMIN:4:16}" '' "$USER")" '.error.code == "not-found"' "user revokes the admin's token"
expect 204 "$(api DELETE "/v1/tokens/$T2ID" '' "$USER")" '' "user revokes its own"
expect 401 "$(api GET /v1/whoami '' "$T2")" '.error.code == "unauthenticated"' "revoked token"
expect 200 "$(api GET /v1/whoami '' "$USER")" '' "the other token still works"
expect 200 "$(api GET '/v1/audit?limit=5' '' "$ADMIN")" '(.items | length == 5) and .items[0].action == "token.revoke" and .items[0].actor == "bob"' "audit log"
expect 400 "$(api GET '/v1/audit?limit=0' '' "$ADMIN")" '.error.field == "limit"' "bad limit"
expect 403 "$(api GET /v1/audit '' "$USER")" '.error.code == "forbidden"' "user reads the audit log"
pass "tokens revoked at once; the audit log readable by admins"
