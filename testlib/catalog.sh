# shellcheck shell=bash
# catalog.sh: run the shipped catalogue (conf/catalog) for real, with the
# engine's part played by this shell: `drover solve` makes the layout, `drover
# plan` the DAG of tasks, and exec_plan runs the tasks whose dependencies are
# done, wave after wave (at most one task per node at a time, one-by-one
# strategies honoured), through the real plugins: the provider PROVIDER
# (container, the default: real LXC containers, container.sh; or loopback)
# for create, confirm and delete, ssh for bootstrap and the services' shell actions.
# A create gets the node's hardware and image types' providermap fields (cpus,
# memory, image), as the engine's would. Macros of the
# cluster config and the action fields are expanded for each task's node by
# macro_expand() (tests/plugins/macro_cli.c); a task whose macros need a node
# that is not confirmed yet waits (DRV_EAGAIN), as the engine's would.

PROVIDER=${PROVIDER:-container}
if [ "$PROVIDER" = container ]; then
  # shellcheck source=container.sh
  . "$DROVER_SOURCE_DIR/testlib/container.sh"
  PROV_PLUGIN=$CT
  # shellcheck disable=SC2034 # for the tests that source this file
  PROV_ROOT=$CT_ROOT
else
  # shellcheck source=plugins.sh
  . "$DROVER_SOURCE_DIR/testlib/plugins.sh"
  PROV_PLUGIN=$LB
  # shellcheck disable=SC2034 # for the tests that source this file
  PROV_ROOT=$NODES
fi
# PROV_ROOT: the provider's directory of nodes, with their address claims in .addresses.

CATALOG="${CATALOG:-$DROVER_SOURCE_DIR/conf/catalog}"
# The tasks' provider is the catalogue's entity (plugins.sh provider_json).
PROVIDER_FROM="$CATALOG/providers"
export DROVER_RESOURCES="${DROVER_RESOURCES:-$CATALOG/resources}"
MACRO="$DROVER_BUILD_DIR/tests/plugins/drover-test-macro"
CL="$T/cluster"
mkdir -p "$CL"
JOB=0

# types_json NODE: the providermap fields of the node's hardware and image types for
# PROVIDER (cost left out), as the engine puts them in the node's config.
types_json() {
  local hw im
  hw=$(jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .hardwaretype // empty' "$LAYOUT")
  im=$(jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .imagetype // empty' "$LAYOUT")
  jq -cn --arg p "$PROVIDER" --slurpfile h "$CATALOG/hardwaretypes/${hw:-small}.json" \
    --slurpfile i "$CATALOG/imagetypes/${im:-debian12}.json" \
    '($h[0].providermap[$p] // {}) + ($i[0].providermap[$p] // {}) | del(.cost)'
}

# cluster_config: the template's default config with USER_CONFIG (JSON) merged in.
cluster_config() {
  jq -c --argjson u "${USER_CONFIG:-{\}}" '.defaults.config * $u' \
    "$CATALOG/clustertemplates/$TEMPLATE.json"
}

# layout_solve N [solve args...]: the solver's layout for N nodes, ids node-1..N.
layout_solve() {
  local n=$1
  shift
  "$BIN/drover" solve --catalog "$CATALOG" --template "$TEMPLATE" --nodes "$n" --json --per-node \
    "$@" > "$CL/solved.json" || fail "drover solve $TEMPLATE --nodes $n failed"
  # Nodes the solver kept keep their ids; new ones take the next free node-<n>.
  jq '([.nodes[].id // empty]) as $used |
      reduce range(0; .nodes | length) as $i ({l: ., k: 1};
        if .l.nodes[$i].id then . else
          (first(range(.k; 100000) as $k | select(($used | index("node-\($k)")) | not) | $k)) as $k |
          .l.nodes[$i].id = "node-\($k)" | .k = $k + 1 end) | .l' \
    "$CL/solved.json" > "$CL/target.json"
}

# plan OP [plan args...]: `drover plan` into $CL/plan.json.
plan() {
  local op=$1
  shift
  "$BIN/drover" plan --catalog "$CATALOG" --template "$TEMPLATE" --operation "$op" \
    --format json "$@" > "$CL/plan.json" || fail "drover plan $op failed"
}

# nodes_map LAYOUT: the task JSON's "nodes" from a layout with ids and the nodes' key-values.
nodes_map() {
  local id out="{}"
  for id in $(jq -r '.nodes[].id' "$1"); do
    [ -f "$KV/$id.json" ] || echo '{}' > "$KV/$id.json"
    out=$(jq -c --arg id "$id" --argjson o "$out" --slurpfile l "$1" \
      '$o + {($id): ({hostname, ipaddresses} + {services: ($l[0].nodes[] | select(.id == $id) | .services)})}' \
      "$KV/$id.json")
  done
  echo "$out"
}

# expand VALUE_JSON NODE: macro_expand for NODE (macros about services the cluster
# lacks stay as written, as in Coopr); exit status 75 when a node lacks data.
expand() {
  jq -cn --argjson v "$1" --argjson nodes "$(nodes_map "$LAYOUT")" --arg self "$2" \
    '{value: $v, nodes: $nodes, self: $self}' | "$MACRO" 2> "$CL/macro-$2.err"
}

# expand_or_fail VAR VALUE NODE INDEX: expand into VAR; on a macro error the
# task fails with its message (returns 1), on missing data it waits (75).
expand_or_fail() {
  local out rc=0
  out=$(expand "$2" "$3") || rc=$?
  if [ $rc = 75 ]; then return 75; fi
  if [ $rc != 0 ]; then
    jq -cn --arg m "$(cat "$CL/macro-$3.err")" '{status: "failed", message: $m}' > "$CL/r-$4.json"
    return 1
  fi
  printf -v "$1" '%s' "$out"
}

# run_task INDEX: run plan task INDEX (0-based) through its plugin; the result in
# $CL/r-INDEX.json. Returns 75 when its macros must wait for another node.
run_task() {
  local i=$1 t node action svc type fields cc f extra plugin rc=0
  t=$(jq -c ".tasks[$i]" "$CL/plan.json")
  node=$(jq -r .node <<< "$t")
  action=$(jq -r .action <<< "$t")
  svc=$(jq -r '.service // ""' <<< "$t")
  type=$(jq -r .type <<< "$t")
  fields=$(jq -c '.fields // {}' <<< "$t")
  cc=$(cluster_config) # node-level tasks get it as written: their nodes have no addresses yet
  extra=".config.nodes = $(nodes_map "$LAYOUT")"
  case "$action" in
  create | confirm | delete)
    plugin=$PROV_PLUGIN
    extra="$extra | .config += $(types_json "$node")"
    ;;
  bootstrap)
    plugin=$SSHA
    extra="$extra | .config.service = {action: {type: \"bootstrap\", fields: $fields}}"
    ;;
  *)
    plugin=$SSHA
    expand_or_fail cc "$cc" "$node" "$i" || { rc=$?; [ $rc = 75 ] && return 75; return 0; }
    expand_or_fail f "$fields" "$node" "$i" || { rc=$?; [ $rc = 75 ] && return 75; return 0; }
    extra="$extra | .config.service = {name: \"$svc\", action: {type: \"$type\", fields: $f}}"
    ;;
  esac
  JOB_ID=$JOB SERVICE=$svc CLUSTER_CONFIG=$cc task "$action" "$node" 1 "$i" "$extra" |
    "$plugin" > "$CL/r-$i.json" 2>> "$T/plugins.log" || rc=$?
  [ -s "$CL/r-$i.json" ] || echo '{"status": "failed", "message": "no output"}' > "$CL/r-$i.json"
  return 0
}

# exec_plan: run $CL/plan.json against layout $LAYOUT. 0 when every task
# succeeded; else 1 with FAILED_TASK and FAILED_MESSAGE set. $CL/done lists
# the indexes of the tasks done, in the order they finished.
exec_plan() {
  JOB=$((JOB + 1))
  local n i id deps node key strat waiting progress
  n=$(jq '.tasks | length' "$CL/plan.json")
  local -a st
  for ((i = 0; i < n; i++)); do st[i]=todo; done
  : > "$CL/done"
  FAILED_TASK=
  FAILED_MESSAGE=
  # Fields that may be empty get "-": read splits on tabs, and empty fields would merge.
  jq -r '.tasks[] | [.id, (.node // "-"), .action, (.service // "-"),
    (.strategy.type // "parallel"), ((.deps // []) | join(",") | if . == "" then "-" else . end)]
    | @tsv' "$CL/plan.json" > "$CL/tasks.tsv"
  local -a ids nodes actions svcs strats depss
  while IFS=$'\t' read -r id node a s strat deps; do
    ids+=("$id")
    nodes+=("$node")
    actions+=("$a")
    svcs+=("$s")
    strats+=("$strat")
    depss+=("$deps")
  done < "$CL/tasks.tsv"
  declare -A done_ids=()
  while :; do
    waiting=0
    progress=0
    declare -A busy=() onebyone=()
    local -a wave=()
    for ((i = 0; i < n; i++)); do
      [ "${st[i]}" = todo ] || continue
      waiting=$((waiting + 1))
      local ok=1 d
      IFS=, read -r -a dl <<< "${depss[i]}"
      for d in "${dl[@]}"; do [ "$d" = - ] || [ -n "${done_ids[$d]:-}" ] || ok=0; done
      [ $ok = 1 ] || continue
      if [ "${actions[i]}" = anchor ]; then
        st[i]="done"
        done_ids[${ids[i]}]=1
        progress=1
        continue
      fi
      [ -n "${busy[${nodes[i]}]:-}" ] && continue
      key="${svcs[i]}/${actions[i]}"
      if [ "${strats[i]}" = one-by-one ]; then
        [ -n "${onebyone[$key]:-}" ] && continue
        onebyone[$key]=1
      fi
      busy[${nodes[i]}]=1
      wave+=("$i")
    done
    [ $waiting = 0 ] && return 0
    local -a pids=()
    for i in "${wave[@]}"; do
      run_task "$i" &
      pids+=($!)
    done
    local k=0 rc
    for i in "${wave[@]}"; do
      rc=0
      wait "${pids[k]}" || rc=$?
      k=$((k + 1))
      [ $rc = 75 ] && continue # its macros wait for another node's data
      if [ $rc != 0 ] || [ "$(jq -r .status "$CL/r-$i.json")" != ok ]; then
        FAILED_TASK=${ids[i]}
        FAILED_MESSAGE=$(jq -r .message "$CL/r-$i.json" 2> /dev/null || echo "exit $rc")
        st[i]=failed
        continue
      fi
      cp "$CL/r-$i.json" "$T/last.json"
      merge "${nodes[i]}"
      [ "${actions[i]}" = create ] && record_node "${nodes[i]}"
      [ "${actions[i]}" = delete ] && rm -f "$T/pids/lbnode-${nodes[i]}.pid"
      st[i]="done"
      done_ids[${ids[i]}]=1
      echo "$i" >> "$CL/done"
      progress=1
    done
    [ -n "$FAILED_TASK" ] && return 1
    if [ $progress = 0 ]; then
      FAILED_TASK=stuck
      FAILED_MESSAGE="no task can run: $waiting wait"
      return 1
    fi
  done
}

# run_op OP [plan args...]: plan and execute one operation; fails the test on error.
run_op() {
  plan "$@"
  exec_plan || fail "$1: task $FAILED_TASK failed: $FAILED_MESSAGE"
  pass "$1: $(jq '.tasks | length' "$CL/plan.json") tasks done"
}

# change_layout OP: expand or shrink from $LAYOUT to $CL/target.json. While it
# runs, the cluster's nodes are both layouts' (a leaving node is part of the
# cluster until its delete); afterwards $LAYOUT is the target.
change_layout() {
  cp "$LAYOUT" "$CL/before.json"
  jq -s '.[1].nodes as $t | {nodes: ($t + [.[0].nodes[] | . as $n |
    select([$t[].id] | index($n.id) | not)])}' "$CL/before.json" "$CL/target.json" > "$LAYOUT"
  run_op "$1" --existing "$CL/before.json" --target "$CL/target.json"
  cp "$CL/target.json" "$LAYOUT"
}

# node_pidns NODE: the node's PID namespace (for ns_has).
node_pidns() { jq -r .pidns "$(node_dir "$1")/node.json"; }

# Checks made inside a node, over SSH with the cluster's key, whatever the provider:
# node_has NODE REGEX (a process of the node), node_cat NODE PATH (a file of the node:
# PATH below the node's root, DROVER_NODE_ROOT on loopback), node_four NODE WORD
# (ZooKeeper's four-letter word, asked from inside the node to its own address).
node_has() {
  known_host "$1"
  on "$1" 'ps -e -o args' | grep -qE "$2"
}
node_cat() {
  known_host "$1"
  on "$1" "cat \"\${DROVER_NODE_ROOT-}$2\""
}
node_test() { # node_test NODE PATH: PATH exists on the node (below its root)
  known_host "$1"
  on "$1" "test -e \"\${DROVER_NODE_ROOT-}$2\""
}
node_four() {
  known_host "$1"
  on "$1" "(exec 3<> /dev/tcp/$(kv "$1" .ipaddresses.access_v4)/2181 && printf '%s' '$2' >&3 && timeout 5 cat <&3) 2> /dev/null || true"
}

layout_nodes() { jq -r '.nodes[].id' "$LAYOUT"; }
with_service() { jq -r --arg s "$1" '.nodes[] | select(.services | index($s)) | .id' "$LAYOUT"; }
