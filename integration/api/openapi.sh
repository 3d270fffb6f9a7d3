#!/usr/bin/env bash
# api_openapi: GET /v1/openapi.json, without a token, is docs/openapi.yaml as the build
# converted it; and every operation that document names exists on a live droverd: asked
# with an admin's token (a route of another role answers 403) and sample values, no answer is the router's own
# 404 ("no such path") or 405. (test_openapi holds the document to the route table without
# a server; the other API tests validate the answers they get against it.)
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node d1
setup_acme
code=$(curl -s -o "$T/served.json" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/openapi.json")
[ "$code" = 200 ] || fail "GET /v1/openapi.json without a token: $code"
cmp -s "$T/served.json" <(tr -d '\n' < "$DROVER_BUILD_DIR/generated/openapi.json") ||
  fail "/v1/openapi.json is not build/generated/openapi.json"
[ "$(jq -r .openapi "$T/served.json")" = 3.1.0 ] || fail "not OpenAPI 3.1"
pass "GET /v1/openapi.json (no token) is docs/openapi.yaml, OpenAPI 3.1"

# Each operation, its enumerated path parameters expanded, the others a sample value.
jq -r '.paths | to_entries[] | .key as $p | .value | to_entries[] |
  select(.key | test("^(get|put|post|delete)$")) | "\(.key | ascii_upcase) \($p)"' "$T/served.json" |
  while read -r method path; do
    [[ $path == /v1/* ]] || continue
    # The values of its enumerated path parameter ({operation}, {action}), from the document.
    mapfile -t ops < <(jq -r --arg p "$path" '[.paths[$p].parameters[]? | select(.in == "path") |
      .schema.enum[]?] | .[]' "$T/served.json")
    [ ${#ops[@]} -gt 0 ] || ops=(x)
    for op in "${ops[@]}"; do
      p=$(echo "$path" | sed -e "s/{operation}/$op/; s/{action}/$op/" -e 's/{[a-z]*}/999999/g')
      r=$(api "$method" "$p" '{}' "$ADMIN")
      code=${r%% *}
      if [ "$code" = 405 ] || { [ "$code" = 404 ] && [[ $r == *'"no such path'* ]]; }; then
        echo "$method $p: $r" >> "$T/missing"
      fi
    done
  done
[ ! -s "$T/missing" ] || fail "documented operations the server does not have: $(cat "$T/missing")"
pass "every documented operation reaches a route of a live droverd"
