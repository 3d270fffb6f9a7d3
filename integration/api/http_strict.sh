#!/usr/bin/env bash
# Strict HTTP (issue 14, item 6): requests that a lenient parser reads one way
# and a proxy another are refused with the documented JSON errors, and none of
# them writes anything. Two Content-Length headers (the smuggling case), an
# encoded NUL in a path or query, an encoded '/', a raw NUL after a valid
# token, HTTP/1.1 without Host, Transfer-Encoding, folded and bare-LF lines;
# unknown methods get 501 and known ones on the wrong path 405 (with Allow),
# an oversized body 413 before it is read, all as JSON; the probes and
# /metrics answer GET and HEAD only.
. "$(dirname "$0")/../../testlib/test-lib.sh"
. "$(dirname "$0")/../../testlib/api.sh"

start_api_node droverd-a "http.max_body = 64k"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant"
ADMIN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
TOKEN=$ADMIN
expect 201 "$(api POST /v1/hardwaretypes '{"name":"standard-small","providermap":{}}')" '' "hardwaretype"

# raw FORMAT [ARGS...]: send printf FORMAT ARGS on a fresh connection, print what comes back
# (at most 3 s; every case here closes the connection after its answer).
raw() {
  local fmt=$1
  shift
  exec 3<> "/dev/tcp/127.0.0.1/$PORT"
  # shellcheck disable=SC2059
  printf "$fmt" "$@" >&3
  timeout 3 cat <&3 | tr -d '\r' || true
  exec 3<&-
}
status_of() { head -n 1 <<< "$1" | awk '{print $2}'; }
json_of() { awk 'body {print} /^$/ {body = 1}' <<< "$1" | head -n 1; }
replies() { grep -c '^HTTP/1.1 ' <<< "$1" || true; }

# want STATUS CODE RESPONSE WHAT: exactly one reply, with STATUS and a JSON error CODE.
want() {
  local st=$1 code=$2 r=$3 what=$4
  [ "$(status_of "$r")" = "$st" ] || fail "$what: expected $st, got: $(head -n 1 <<< "$r")"
  [ "$(replies "$r")" = 1 ] || fail "$what: $(replies "$r") replies on one connection"
  grep -qi '^content-type: application/json' <<< "$r" || fail "$what: not JSON: $r"
  json_of "$r" | jq -e ".error.code == \"$code\" and (.error.message | length > 0)" > /dev/null ||
    fail "$what: body $(json_of "$r")"
  pass "$what: $st $code"
}

# 1. Two Content-Length headers: the first would make the rest of the body a second
#    request (smuggled past a proxy that used the other one). Neither tenant may appear.
inner=$(printf 'POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 16\r\n\r\n{"name":"smug2"}' "$SUPER")
r=$(raw 'POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 16\r\nContent-Length: %d\r\n\r\n{"name":"smug1"}%s' \
  "$SUPER" $((16 + ${#inner})) "$inner")
want 400 malformed "$r" "two Content-Length headers"
[ "$(psql_q "SELECT count(*) FROM tenants WHERE name LIKE 'smug%'")" = 0 ] ||
  fail "a request with two Content-Length headers wrote: $(psql_q "SELECT name FROM tenants")"
r=$(raw 'POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 16\r\nTransfer-Encoding: chunked\r\n\r\n{"name":"smug3"}' "$SUPER")
want 400 malformed "$r" "Content-Length with Transfer-Encoding"
r=$(raw 'POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"name":"smug4"}\r\n0\r\n\r\n' "$SUPER")
want 501 not-implemented "$r" "Transfer-Encoding: chunked"
[ "$(psql_q "SELECT count(*) FROM tenants WHERE name LIKE 'smug%'")" = 0 ] || fail "a refused request wrote a tenant"

# 2. Encoded NUL in a path or a query value: it used to cut the value short.
r=$(raw 'GET /v1/hardwaretypes/standard-small%%00junk HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "encoded NUL in the path"
r=$(raw 'GET /v1/users?tenant=acme%%00junk HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$SUPER")
want 400 malformed "$r" "encoded NUL in a query value"

# 3. %2F is not a separator: it used to be decoded before routing.
r=$(raw 'GET /v1%%2Fhardwaretypes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "encoded '/' in the path"
r=$(raw 'GET /v1/hardwaretypes/%%2e%%2e HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "encoded '..' segment"

# 4. A raw NUL after a valid token.
r=$(raw 'GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\0junk\r\nConnection: close\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "raw NUL after a valid token"

# 5. HTTP/1.1 needs Host; lines end in CRLF; no folding.
r=$(raw 'GET /v1/whoami HTTP/1.1\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "HTTP/1.1 without Host"
r=$(raw 'GET /v1/whoami HTTP/1.1\nHost: x\nAuthorization: Bearer %s\n\n' "$ADMIN")
want 400 malformed "$r" "bare LF line ends"
r=$(raw 'GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n %s\r\n\r\n' "$ADMIN")
want 400 malformed "$r" "folded header line"
r=$(raw 'GET /v1/whoami HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$ADMIN")
[ "$(status_of "$r")" = 200 ] || fail "HTTP/1.0 without Host: $(head -n 1 <<< "$r")"
pass "HTTP/1.0 without Host is fine"

# 6. Methods: unknown -> 501, known on a path that does not take it -> 405 with Allow; JSON both.
r=$(raw 'BREW /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 501 not-implemented "$r" "unknown method"
r=$(raw 'PATCH /v1/hardwaretypes/standard-small HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 405 method-not-allowed "$r" "PATCH on an entity"
grep -qi '^allow: GET, HEAD, PUT, DELETE$' <<< "$r" || fail "405 without the right Allow: $r"
r=$(raw 'OPTIONS /v1/clusters HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' "$ADMIN")
want 405 method-not-allowed "$r" "OPTIONS on clusters"

# 7. An oversized body is refused from its Content-Length, as JSON, before it is read.
head -c 70000 /dev/zero | tr '\0' 'a' | jq -Rc '{name: "big", description: .}' > "$T/big.json"
code=$(curl -s -o "$T/big.out" -D "$T/big.hdr" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
  -H 'Content-Type: application/json' --data-binary "@$T/big.json" "http://127.0.0.1:$PORT/v1/services")
[ "$code" = 413 ] || fail "oversized body: $code"
grep -qi '^content-type: application/json' "$T/big.hdr" && jq -e '.error.code == "too-large"' "$T/big.out" > /dev/null ||
  fail "413 is not the JSON error: $(cat "$T/big.out")"
r=$(raw 'POST /v1/services HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 999999999\r\n\r\n' "$ADMIN")
want 413 too-large "$r" "a huge Content-Length, body never sent"
pass "oversized body: 413 JSON"

# 8. Probes and /metrics: GET and HEAD only.
for p in /healthz /readyz /metrics; do
  for m in POST PUT DELETE; do
    code=$(curl -s -o "$T/probe.out" -D "$T/probe.hdr" -w '%{http_code}' -X "$m" "http://127.0.0.1:$PORT$p")
    [ "$code" = 405 ] && jq -e '.error.code == "method-not-allowed"' "$T/probe.out" > /dev/null ||
      fail "$m $p: $code $(cat "$T/probe.out")"
    grep -qi '^allow: GET, HEAD' "$T/probe.hdr" || fail "$m $p: no Allow header"
  done
  r=$(raw 'HEAD %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$p")
  [ "$(status_of "$r")" = 200 ] && [ -z "$(json_of "$r")" ] && grep -qi '^content-length: [1-9]' <<< "$r" ||
    fail "HEAD $p: $r"
done
pass "/healthz, /readyz, /metrics: GET and HEAD only, 405 JSON otherwise"

# The node still serves, and none of the refused requests wrote anything.
expect 200 "$(api GET /v1/hardwaretypes/standard-small)" '.name == "standard-small"' "after all that"
[ "$(psql_q "SELECT count(*) FROM tenants")" = 1 ] || fail "tenants: $(psql_q "SELECT name FROM tenants")"
[ "$(psql_q "SELECT count(*) FROM entities WHERE kind = 'service'")" = 0 ] || fail "a refused body wrote a service"
pass "nothing written by refused requests"
