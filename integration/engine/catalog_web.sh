#!/usr/bin/env bash
# The shipped catalogue's web tier (HAProxy in front of nginx) through the API,
# the engine and two workers with the real plugins, each operation checked on
# the nodes themselves with real clients:
#
#   create 3         requests through HAProxy reach both nginx nodes
#   configure        the new page everywhere, the same nginx processes
#   configure+restart the new page, new nginx processes
#   expand +1        a third nginx; the same job reconfigures and restarts haproxy
#                    (its backends are a macro over the nginx nodes): it spreads over it
#   shrink -1        the node that leaves is deleted (directory, listener), haproxy
#                    reconfigured in the same job no longer sends to it
#   addservices      zookeeper-server on the nginx nodes: an ensemble answers
#   removeservices   ZooKeeper stopped and its files gone; the web tier untouched
#   restart          served again
#   delete           no directory, listener or address claim left
. "$(dirname "$0")/../plugins/plugins_lib.sh"
. "$(dirname "$0")/../api/api_lib.sh"
. "$(dirname "$0")/engine_lib.sh"

SESSION=6s
RESOURCES="$DROVER_SOURCE_DIR/conf/catalog/resources"

start_droverd 1
SETTINGS=$(loopback_settings)
WORKER_PLUGINS=loopback,ssh CONCURRENCY=8 start_worker worker-1 "worker.resources_dir = $RESOURCES" "$SETTINGS"
WORKER_PLUGINS=loopback,ssh CONCURRENCY=8 start_worker worker-2 "worker.resources_dir = $RESOURCES" "$SETTINGS"
expect 201 "$(api POST /v1/tenants '{"name":"acme"}' "$SUPER")" '' "tenant acme"
TOKEN=$(body_of "$(api POST /v1/users '{"name":"alice","role":"admin","tenant":"acme"}' "$SUPER")" | jq -r .token)
# The loopback provider's root and network are the workers' (loopback_settings), not the
# tenant's: the shipped catalogue's provider names neither.
catalogue_json "$DROVER_SOURCE_DIR/conf/catalog" > "$T/catalog.json"
expect 200 "$(api POST /v1/import "@$T/catalog.json")" '' "import the shipped catalogue"

# op NAME BODY: the operation, accepted and run to success.
op() {
  local r
  r=$(api POST "/v1/clusters/$CID/$1" "$2")
  expect 202 "$r" '' "$1"
  LAST_JOB=$(body_of "$r" | jq -r .job.id)
  wait_job "$LAST_JOB" succeeded 600
}
# job_has_task ACTION SERVICE: the last job ran a task of that service and action.
job_has_task() {
  body_of "$(api GET "/v1/jobs/$LAST_JOB")" |
    jq -e --arg a "$1" --arg s "$2" '[.tasks[] | select(.action == $a and .service == $s and .status == "succeeded")] | length == 1' > /dev/null
}
# cl: the cluster, with its live nodes only (deleted ones stay listed, with their status).
cl() { body_of "$(api GET "/v1/clusters/$CID")" | jq -c '.nodes |= map(select(.status != "deleted"))'; }
with_service() { cl | jq -r --arg s "$1" '.nodes[] | select(.services | index($s)) | .id'; }
prop() { cl | jq -r --arg n "$1" ".nodes[] | select(.id == \$n) | .properties$2"; }
node_pidns() { jq -r .pidns "$NODES/$(prop "$1" '["provider-id"]')/node.json"; }
# ns_pids NODE REGEX: the host pids of the node's live processes that match, sorted.
ns_pids() {
  local ns p
  ns=$(node_pidns "$1")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/pid" 2> /dev/null)" = "$ns" ] || continue
    [ "$(awk '{print $3}' "$p/stat" 2> /dev/null)" = Z ] && continue
    if tr '\0' ' ' < "$p/cmdline" 2> /dev/null | grep -qE "$2"; then echo "${p#/proc/}"; fi
  done | sort -n | tr '\n' ' '
}
masters() { for n in $(with_service nginx); do ns_pids "$n" "nginx: master"; done; }
# config_with JQ: the cluster's config changed by a jq filter, as a configure body's "config".
config_with() { cl | jq -c ".config | $1"; }

r=$(api POST /v1/clusters '{"name":"web","template":"web-tier","nodes":3}')
expect 202 "$r" '' "create a 3-node web tier"
CID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 600
lb=$(with_service haproxy)
[ "$(echo "$lb" | wc -w)" = 1 ] || fail "expected one haproxy node, got: $lb"
LB_URL="http://$(prop "$lb" .ipaddresses.access_v4)/"
want_backends "$(nginx_nodes)"
grep -q "message=Hello from Drover's web tier" <<< "$(curl -s "$LB_URL")" || fail "the page's message"
ns_has "$lb" haproxy || fail "no haproxy process on $lb"
for n in $(with_service nginx); do ns_has "$n" "nginx: master" || fail "no nginx on $n"; done
pass "create: haproxy on $lb spreads requests over $(nginx_nodes)"

# configure without a restart: the config reaches the nodes (the page is a file nginx
# serves as it is), the servers are not restarted; with one, they are.
masters_before=$(masters)
op configure "{\"config\": $(config_with '.nginx.message = "second edition"')}"
for _ in 1 2 3 4; do
  grep -q "message=second edition" <<< "$(curl -s "$LB_URL")" || fail "an old page after configure"
done
[ "$(masters)" = "$masters_before" ] || fail "configure without restart restarted nginx: $masters_before -> $(masters)"
[ "$(cl | jq -r .config.nginx.message)" = "second edition" ] || fail "the cluster's config is not the new one"
pass "configure: the new page everywhere, the same nginx processes"
op configure "{\"config\": $(config_with '.nginx.message = "third edition"'), \"restart\": true, \"services\": [\"nginx\"]}"
for _ in 1 2 3 4; do
  grep -q "message=third edition" <<< "$(curl -s "$LB_URL")" || fail "an old page after configure with restart"
done
for p in $masters_before; do [ -d "/proc/$p" ] && fail "configure with restart left nginx $p running"; done
[ "$(masters | wc -w)" = 2 ] || fail "nginx masters after the restart: $(masters)"
pass "configure with restart: the new page, new nginx processes"

op expand '{"nodes": 1}'
[ "$(with_service nginx | wc -l)" = 3 ] || fail "expand did not add an nginx node"
for a in configure stop start; do job_has_task "$a" haproxy || fail "the expand did not $a haproxy"; done
want_backends "$(nginx_nodes)"
pass "expand: haproxy reconfigured in the same job, requests spread over $(nginx_nodes)"

before=$(cl | jq -r '.nodes[].id' | sort)
declare -A dir_of addr_of
for n in $before; do
  dir_of[$n]="$NODES/$(prop "$n" '["provider-id"]')"
  addr_of[$n]=$(prop "$n" .ipaddresses.access_v4)
done
op shrink '{"nodes": 1}'
gone=$(comm -23 <(echo "$before") <(cl | jq -r '.nodes[].id' | sort))
[ "$(echo "$gone" | wc -w)" = 1 ] || fail "shrink removed \"$gone\""
[ -e "${dir_of[$gone]}" ] && fail "shrink left $gone's directory"
listening "${addr_of[$gone]}" && fail "shrink left something of $gone listening"
for a in configure stop start; do job_has_task "$a" haproxy || fail "the shrink did not $a haproxy"; done
want_backends "$(nginx_nodes)"
pass "shrink: $gone deleted, requests spread over $(nginx_nodes)"

op addservices '{"services": ["zookeeper-server"]}'
zk_nodes=$(with_service zookeeper-server)
[ -n "$zk_nodes" ] || fail "addservices put zookeeper-server nowhere"
for n in $zk_nodes; do
  a=$(prop "$n" .ipaddresses.access_v4)
  for _ in $(seq 300); do
    mode=$( ( (exec 3<> "/dev/tcp/$a/2181" && printf srvr >&3 && timeout 3 cat <&3) 2> /dev/null || true) |
      awk -F': ' '/^Mode/ {print $2}')
    case "$mode" in leader | follower | standalone) break ;; esac
    sleep 0.1
  done
  case "$mode" in leader | follower | standalone) ;; *) fail "zookeeper on $n: mode \"$mode\"" ;; esac
done
want_backends "$(nginx_nodes)"
pass "addservices zookeeper-server: it answers on ${zk_nodes//$'\n'/ }"
op removeservices '{"services": ["zookeeper-server"]}'
for n in $zk_nodes; do
  ns_has "$n" QuorumPeerMain && fail "removeservices left ZooKeeper running on $n"
  [ -e "$(prop "$n" .node_root)/srv/drover/zookeeper" ] && fail "removeservices left files on $n"
done
want_backends "$(nginx_nodes)"
pass "removeservices zookeeper-server: stopped and removed, the web tier untouched"

op restart '{}'
want_backends "$(nginx_nodes)"
pass "restart: served again"

addrs=$(cl | jq -r '.nodes[].properties.ipaddresses.access_v4')
r=$(api DELETE "/v1/clusters/$CID")
expect 202 "$r" '' "delete"
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 600
left=$(find "$NODES" -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l)
[ "$left" = 0 ] || fail "node directories left after delete: $(ls "$NODES")"
for a in $addrs; do listening "$a" && fail "something still listens on $a"; done
[ -z "$(ls -A "$NODES/.addresses" 2> /dev/null)" ] || fail "address claims left"
pass "delete: no node directory, listener or address claim left"
