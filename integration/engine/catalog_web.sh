#!/usr/bin/env bash
# The shipped catalogue's web tier (HAProxy in front of nginx) through the API, the
# engine and two workers with the real plugins, on isolated machines (the container
# provider: unprivileged LXC containers), each operation checked inside the nodes
# (lxc-attach: their processes and files) and through the balancer as a client:
#
#   create 3         requests through HAProxy reach both nginx nodes
#   configure        the new page everywhere, the same nginx processes
#   configure+restart the new page, new nginx processes
#   expand +1        a third nginx; the same job reconfigures and restarts haproxy
#                    (its backends are a macro over the nginx nodes): it spreads over it
#   shrink -1        the node that leaves is deleted (nothing of it left on the host),
#                    haproxy reconfigured in the same job no longer sends to it
#   addservices      zookeeper-server on the nginx nodes: each answers srvr in its node
#   removeservices   ZooKeeper stopped and its files gone; the web tier untouched
#   restart          served again
#   delete           nothing of any node left on the host
. "$(dirname "$0")/../../testlib/container.sh"
. "$(dirname "$0")/../../testlib/api.sh"
. "$(dirname "$0")/../../testlib/engine.sh"

SESSION=6s
RESOURCES="$DROVER_SOURCE_DIR/conf/catalog/resources"

start_droverd 1
for w in worker-1 worker-2; do
  WORKER_PLUGINS=container,ssh CONCURRENCY=8 start_worker "$w" "worker.resources_dir = $RESOURCES" \
    "worker.host_conf = $T/host.conf"
done
setup_tenant_from "$DROVER_SOURCE_DIR/conf/catalog"

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
ct_of() { prop "$1" '["provider-id"]'; }
# in_node NODE CMD...: CMD inside the node's container; node_has NODE REGEX: a process of it.
in_node() {
  local id
  id=$(ct_of "$1")
  shift
  ct_exec "$id" "$@"
}
node_has() { ct_has "$(ct_of "$1")" "$2"; }
# masters: "node:pid" of every nginx master, as each node's own process table says.
masters() {
  local n
  for n in $(with_service nginx); do
    in_node "$n" ps -e -o stat= -o pid= -o args= | awk -v n="$n" '$1 !~ /^Z/ && /nginx: master/ {print n ":" $2}'
  done | sort | tr '\n' ' '
}
# config_with JQ: the cluster's config changed by a jq filter, as a configure body's "config".
config_with() { cl | jq -c ".config | $1"; }

r=$(api POST /v1/clusters '{"name":"web","template":"web-tier","nodes":3,"provider":"container"}')
expect 202 "$r" '' "create a 3-node web tier on containers"
CID=$(body_of "$r" | jq -r .cluster.id)
wait_job "$(body_of "$r" | jq -r .job.id)" succeeded 600
lb=$(with_service haproxy)
[ "$(echo "$lb" | wc -w)" = 1 ] || fail "expected one haproxy node, got: $lb"
LB_URL="http://$(prop "$lb" .ipaddresses.access_v4)/"
want_backends "$(nginx_nodes)"
grep -q "message=Hello from Drover's web tier" <<< "$(curl -s "$LB_URL")" || fail "the page's message"
node_has "$lb" haproxy || fail "no haproxy process in $lb"
for n in $(with_service nginx); do node_has "$n" "nginx: master" || fail "no nginx in $n"; done
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
now=$(masters)
for p in $masters_before; do [[ " $now " == *" $p "* ]] && fail "configure with restart left nginx $p running"; done
[ "$(wc -w <<< "$now")" = 2 ] || fail "nginx masters after the restart: $now"
pass "configure with restart: the new page, new nginx processes"

op expand '{"nodes": 1}'
[ "$(with_service nginx | wc -l)" = 3 ] || fail "expand did not add an nginx node"
for a in configure stop start; do job_has_task "$a" haproxy || fail "the expand did not $a haproxy"; done
want_backends "$(nginx_nodes)"
pass "expand: haproxy reconfigured in the same job, requests spread over $(nginx_nodes)"

before=$(cl | jq -r '.nodes[].id' | sort)
declare -A id_of addr_of
for n in $before; do
  id_of[$n]=$(ct_of "$n")
  addr_of[$n]=$(prop "$n" .ipaddresses.access_v4)
done
op shrink '{"nodes": 1}'
gone=$(comm -23 <(echo "$before") <(cl | jq -r '.nodes[].id' | sort))
[ "$(echo "$gone" | wc -w)" = 1 ] || fail "shrink removed \"$gone\""
left=$(ct_leftovers "${id_of[$gone]}" "${addr_of[$gone]}")
[ -z "$left" ] || fail "shrink left of $gone on the host: $left"
listening "${addr_of[$gone]}" && fail "shrink left something of $gone listening"
for a in configure stop start; do job_has_task "$a" haproxy || fail "the shrink did not $a haproxy"; done
want_backends "$(nginx_nodes)"
pass "shrink: $gone deleted, requests spread over $(nginx_nodes)"

op addservices '{"services": ["zookeeper-server"]}'
zk_nodes=$(with_service zookeeper-server)
[ -n "$zk_nodes" ] || fail "addservices put zookeeper-server nowhere"
for n in $zk_nodes; do
  a=$(prop "$n" .ipaddresses.access_v4)
  id=$(ct_of "$n")
  for _ in $(seq 300); do
    mode=$(ct_four "$id" "$a" srvr | awk -F': ' '/^Mode/ {print $2}')
    case "$mode" in leader | follower | standalone) break ;; esac
    sleep 0.1
  done
  case "$mode" in leader | follower | standalone) ;; *) fail "zookeeper on $n: mode \"$mode\"" ;; esac
done
want_backends "$(nginx_nodes)"
pass "addservices zookeeper-server: it answers srvr inside ${zk_nodes//$'\n'/ }"
op removeservices '{"services": ["zookeeper-server"]}'
for n in $zk_nodes; do
  node_has "$n" QuorumPeerMain && fail "removeservices left ZooKeeper running in $n"
  in_node "$n" test -e /srv/drover/zookeeper && fail "removeservices left files in $n"
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
left=$(ct_root_leftovers)
[ -z "$left" ] || fail "delete left on the host: $left"
for a in $addrs; do listening "$a" && fail "something still listens on $a"; done
pass "delete: no container, process, mount, veth, cgroup, file or claim left"
