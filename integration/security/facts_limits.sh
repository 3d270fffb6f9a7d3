#!/usr/bin/env bash
# Issue 32: an oversized providermap. A hardware or image type's providermap entry is the
# tenant's value that reaches the queue item of every task of every node of the type (and
# ZooKeeper's memory with it), so a tenant's entities are bounded (src/api/tenantvals.c):
#  1. an entry over 4 KiB, by create, replace and import: 422 too-large naming the entry,
#     with "limit" and "size"; nothing stored (the import's good entities neither);
#  2. an entry's key over 64 bytes, an entity over 64 KiB: 422 too-large naming the field;
#  3. an entry just under the bound, and the other tenant's entities: accepted, untouched.
# Before the fix, every one of these was stored (201), up to the 4 MiB body.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a
for t in acme evil; do
  expect 201 "$(api POST /v1/tenants "{\"name\":\"$t\"}" "$SUPER")" '' "tenant $t"
done
ACME=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
TOKEN=$(body_of "$(api POST /v1/users '{"name":"eve","role":"admin","tenant":"evil"}' "$SUPER")" | jq -r .token)
expect 201 "$(api POST /v1/hardwaretypes '{"name":"small","providermap":{"container":{"cpus":"1"}}}' "$ACME")" '' "acme's type"

# hw NAME BYTES: a hardware type whose container entry's "blob" is BYTES long.
hw() {
  jq -cn --arg n "$1" --arg b "$(head -c "$2" /dev/zero | tr '\0' 'a')" \
    '{name: $n, providermap: {container: {flavor: "container", blob: $b}}}'
}
# 1. over the entry's bound
expect 422 "$(api POST /v1/hardwaretypes "$(hw big 5000)")" \
  '.error.code == "too-large" and .error.field == "providermap.container" and .error.limit == 4096 and .error.size > 5000' \
  "a 5 KB providermap entry"
expect 201 "$(api POST /v1/hardwaretypes "$(hw big 100)")" '' "a small one"
expect 422 "$(api PUT /v1/hardwaretypes/big "$(hw big 10000)")" '.error.field == "providermap.container"' "replace with 10 KB"
imp=$(jq -cn --argjson ok "$(hw fine 10)" --argjson bad "$(hw huge 8000 | jq -c '.providermap = {ct: .providermap.container}')" \
  '{hardwaretypes: [$ok, $bad]}')
expect 422 "$(api POST /v1/import "$imp")" '.error.code == "too-large" and .error.field == "hardwaretypes[1].providermap.ct"' "import"
expect 404 "$(api GET /v1/hardwaretypes/fine)" '' "the import stored nothing"
expect 200 "$(api GET /v1/hardwaretypes/big)" '(.providermap.container.blob | length) == 100' "the refused replace changed nothing"
img=$(jq -cn --arg b "$(head -c 5000 /dev/zero | tr '\0' 'b')" '{name: "i", providermap: {container: {image: $b}}}')
expect 422 "$(api POST /v1/imagetypes "$img")" '.error.field == "providermap.container"' "an image type's entry"
pass "1. a providermap entry over 4 KiB: 422 too-large naming it (limit 4096), nothing stored"

# 2. a long key; a whole entity over 64 KiB
long=$(jq -cn --arg k "$(head -c 65 /dev/zero | tr '\0' 'k')" '{name: "lk", providermap: {container: {($k): "x"}}}')
expect 422 "$(api POST /v1/hardwaretypes "$long")" '.error.code == "too-large" and (.error.field | startswith("providermap.container.kkkk"))' "a 65-byte key"
desc=$(jq -cn --arg d "$(head -c 70000 /dev/zero | tr '\0' 'd')" '{name: "wide", description: $d}')
expect 422 "$(api POST /v1/hardwaretypes "$desc")" '.error.code == "too-large" and .error.field == "body" and .error.limit == 65536' "a 70 KB entity"
pass "2. a 65-byte key, a 70 KB entity: 422 too-large naming the field"

# 3. just under the bound; the other tenant untouched
expect 201 "$(api POST /v1/hardwaretypes "$(hw edge 4000)")" '' "a 4 KB entry"
expect 200 "$(api GET /v1/hardwaretypes '' "$ACME")" '[.items[].name] == ["small"]' "acme's types"
pass "3. an entry under the bound is stored; the other tenant's types are as they were"
