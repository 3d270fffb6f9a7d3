#!/usr/bin/env bash
# The ssh automator against loopback nodes: a shell action's script runs on
# its node with the config on standard input and in the environment, its files
# uploaded by SFTP, its output captured (bounded), its exit status reported,
# its time limit enforced by killing its process group on the node; bootstrap;
# and clear errors for bad input.
. "$DROVER_SOURCE_DIR/testlib/plugins.sh"

R="$T/resources"
mkdir -p "$R/t/conf"
export DROVER_RESOURCES="$R"
cat > "$R/t/echo.sh" <<'EOF'
#!/bin/sh
set -e
cfg=$(cat)
echo "args:$#:$1|$2|$3"
echo "node=$DROVER_NODE_ID task=$DROVER_TASK service=$DROVER_SERVICE ip=$DROVER_IP"
echo "port=$DROVER_CFG_CLUSTER_APP_PORT"
[ -f ../stdin.json ] && echo "stdin.json still there"
[ -f ../env.sh ] && echo "env.sh still there"
printf '%s' "$cfg" | jq -c '{port: .cluster.app.port, key: (.ssh | has("private_key")),
  root: (.provider | has("root")), nodes: (.nodes | length),
  secret_env: (env.DROVER_CFG_CLUSTER_APP_PASSWORD == .cluster.app.password)}' > "$DROVER_RESULT"
pwd >&2
EOF
cat > "$R/t/data.sh" <<'EOF'
#!/bin/sh
cat t/conf/settings.txt
printf '{"data": "%s"}' "$(cat t/conf/settings.txt)" > "$DROVER_RESULT"
EOF
echo "from-data-file" > "$R/t/conf/settings.txt"
cat > "$R/t/fail.sh" <<'EOF'
#!/bin/sh
echo "some output"
echo "first complaint" >&2
echo "disk full on /data" >&2
exit 3
EOF
cat > "$R/t/hang.sh" <<'EOF'
#!/bin/sh
sleep 1000 &
echo $$ > "$DROVER_NODE_ROOT/hang.pid"
sleep 1001
EOF
cat > "$R/t/big.sh" <<'EOF'
#!/bin/sh
i=0
while [ $i -lt 20000 ]; do echo "line $i of a long install log, padded to be long enough"; i=$((i+1)); done
echo "the end"
EOF
cat > "$R/t/badresult.sh" <<'EOF'
#!/bin/sh
echo '{"half": ' > "$DROVER_RESULT"
EOF
chmod +x "$R"/t/*.sh

lb_create node-1 node-2
known_host node-1
SERVICE=app
export SERVICE

# action INDEX SCRIPT [ARGS_JSON [EXTRA_JQ]]: a task for service "app" on node-1.
action() {
  local idx=$1 script=$2 args_json=${3:-null} extra=${4:-.}
  task install "${NODE:-node-1}" "${ATT:-1}" "$idx" \
    '.config.service = {name: "app", action: {type: "shell", fields: {script: "'"$script"'",
      args: '"$args_json"', data: ["t/conf"]}}} | '"$extra"
}

export CLUSTER_CONFIG='{"app": {"port": 8080, "password": "pw-s3cr3t-4711"}}'

# --- a script runs with its config on stdin and in the environment ---
action 1 t/echo.sh '"one \"two three\" four"' | run "$SSHA" || fail "echo: $(last .message)"
last .message | grep -q "exit 0" || fail "echo: $(last .message)"
[ "$(last .result.port)" = 8080 ] || fail "stdin config: port $(last .result.port)"
[ "$(last .result.key)" = false ] || fail "the node saw the cluster's private key"
[ "$(last .result.root)" = false ] || fail "the node saw the provider's fields"
[ "$(last .result.secret_env)" = true ] || fail "the config is not in the environment"
grep -q 'args:3:one|two three|four' "$T/plugins.log" || fail "args as a command line"
grep -q "node=node-1 task=install service=app ip=$(kv node-1 .ipaddresses.access_v4)" \
  "$T/plugins.log" || fail "DROVER_* variables"
grep -q "still there" "$T/plugins.log" && fail "stdin.json or env.sh left on the node during the run"
pass "config on stdin (no private key, no provider fields) and as DROVER_CFG_* variables"

# The run's files on the node: in a 0700 handle, the inputs gone.
# shellcheck disable=SC2016 # expanded by the node's shell
h=$(on node-1 'ls -d $DROVER_NODE_ROOT/var/lib/drover/runs/7.1/1')
on node-1 "stat -c %a '$h'" | grep -qx 700 || fail "the handle is not 0700"
on node-1 "ls '$h'" | grep -qE 'stdin.json|env.sh' && fail "inputs left in the handle"
on node-1 "grep -rl pw-s3cr3t-4711 '$h'" && fail "a secret was left in the handle"
grep -q pw-s3cr3t-4711 "$T/plugins.log" && fail "a secret reached the plugin's log"
pass "the handle is private and keeps no secret"

# Array args are quoted one by one; data files are uploaded.
# shellcheck disable=SC2016 # $HOME is an argument, passed verbatim
action 2 t/echo.sh '["a b", "c'"'"'d", "$HOME"]' | run "$SSHA" || fail "array args: $(last .message)"
grep -qF "args:3:a b|c'd|\$HOME" "$T/plugins.log" || fail "array args were not passed verbatim"
# Attack (issue 20): a string args that would be shell on the node. Its words arrive as
# literal arguments; nothing of it runs.
# shellcheck disable=SC2016 # shell syntax, meant to stay literal
action 9 t/echo.sh '"x;touch pwned $(touch pwned2) `id` | c '"'"'q q'"'"'"' | run "$SSHA" || fail "hostile args: $(last .message)"
# shellcheck disable=SC2016 # the literal words the script must have received
grep -qF 'args:8:x;touch|pwned|$(touch' "$T/plugins.log" ||
  fail "string args were run by the node's shell: $(grep 'args:' "$T/plugins.log" | tail -1)"
action 10 t/echo.sh '"a '"'"'b"' | expect_fail "$SSHA" "unterminated quote" 'unterminated quote'
pass "string args are split into words and quoted: no shell syntax reaches the node"
action 3 t/data.sh | run "$SSHA" || fail "data: $(last .message)"
[ "$(last .result.data)" = from-data-file ] || fail "the data file did not arrive"
pass "args (string and array) and data files"

# A command of the node's own (Coopr's "standard shell command").
action 4 /bin/mkdir '["-p", "/tmp/never-mind"]' '.config.service.action.fields.args = ["-p", "'"$(kv node-1 .node_root)"'/made-by-mkdir"]' |
  run "$SSHA" || fail "node command: $(last .message)"
[ -d "$(kv node-1 .node_root)/made-by-mkdir" ] || fail "the node command did not run"
pass "a script that is a command of the node"

# --- failure: the exit status and the last line of stderr ---
rc=0
action 5 t/fail.sh | run "$SSHA" || rc=$?
[ "$rc" = 1 ] && [ "$(last .status)" = failed ] || fail "a failing script succeeded"
last .message | grep -q "exit 3: disk full on /data" || fail "failure message: $(last .message)"
grep -q "first complaint" "$T/plugins.log" || fail "stderr not in the plugin's log"
pass "a failing script: $(last .message)"

# --- bounded output ---
: > "$T/big.log"
action 6 t/big.sh | "$SSHA" > "$T/last.json" 2> "$T/big.log" || fail "big: $(jq -r .message "$T/last.json")"
grep -q "the end" "$T/big.log" || fail "the output's tail is missing"
grep -q "(last 64 KiB)" "$T/big.log" || fail "the cut is not said"
[ "$(stat -c %s "$T/big.log")" -lt 100000 ] || fail "the output was not bounded"
pass "output kept to its last 64 KiB"

# --- the time limit kills the script's process group on the node ---
rc=0
TIMEOUT_MS=3000 action 7 t/hang.sh | run "$SSHA" || rc=$?
[ "$rc" = 1 ] || fail "a hanging script did not fail"
last .message | grep -q "timed out after" || fail "timeout message: $(last .message)"
on node-1 'ps -e -o stat= -o args=' | grep -v '^Z' | grep -qE "sleep 100[01]|hang.sh" &&
  fail "the script's process group survived"
pass "time limit: $(last .message)"
# A re-delivery of the timed-out attempt reports it, and does not run it again.
TIMEOUT_MS=3000 action 7 t/hang.sh | run "$SSHA" && fail "re-delivery after a timeout succeeded"
last .message | grep -q "timed out and was killed" || fail "re-delivery: $(last .message)"
pass "re-delivery of a timed-out attempt: $(last .message)"

# --- the script's result must be a JSON object ---
action 8 t/badresult.sh | run "$SSHA" && fail "a garbage result was accepted"
last .message | grep -q "DROVER_RESULT" || fail "bad result message: $(last .message)"
pass "a garbage result.json is refused"

# --- bootstrap ---
task bootstrap node-2 1 9 '.config.service = {action: {type: "bootstrap", fields: {automators: ["shell"]}}}' |
  run "$SSHA" || fail "bootstrap: $(last .message)"
[ -d "$(kv node-2 .node_root)/var/lib/drover/runs" ] || fail "bootstrap made no work directory"
task bootstrap node-2 1 10 '.config.service = {action: {type: "bootstrap", fields: {automators: ["chef-solo"]}}} | del(.config.ipaddresses)' |
  run "$SSHA" || fail "bootstrap without shell actions: $(last .message)"
last .message | grep -q "nothing to do" || fail "bootstrap without shell: $(last .message)"
pass "bootstrap: a work directory when shell actions are used, nothing otherwise"

# --- dotfiles and the command timeout ---
# A session on a loopback node reads the node's dotfiles (HOME is in the node's root),
# never the host's. A slow one (as the host's /root/.bashrc was in issue 21) makes every
# command slow: past cluster config ssh.command_timeout, the error names what timed out.
home=$(kv node-2 .node_root)/root
known_host node-2
# shellcheck disable=SC2016 # expanded by the node's shell
[ "$(on node-2 'echo $HOME')" = "$home" ] || fail "HOME on the node is not $home"
printf 'sleep 6\n' > "$home/.bashrc"
CLUSTER_CONFIG='{"ssh": {"command_timeout": "2s"}}' task bootstrap node-2 1 20 \
  '.config.service = {action: {type: "bootstrap", fields: {automators: ["shell"]}}}' |
  expect_fail "$SSHA" "slow dotfiles" 'bootstrap: command ".*" on [0-9.]+:22: timed out after 2000 ms \(cluster config ssh.command_timeout\)'
pass "a command past ssh.command_timeout: $(last .message)"
CLUSTER_CONFIG='{"ssh": {"command_timeout": "20s"}}' task bootstrap node-2 1 21 \
  '.config.service = {action: {type: "bootstrap", fields: {automators: ["shell"]}}}' |
  run "$SSHA" || fail "bootstrap with a 20 s command timeout: $(last .message)"
CLUSTER_CONFIG='{"ssh": {"command_timeout": "soon"}}' task bootstrap node-2 1 22 \
  '.config.service = {action: {type: "bootstrap", fields: {automators: ["shell"]}}}' |
  expect_fail "$SSHA" "bad timeout" 'config cluster.ssh.command_timeout: not a duration'
rm -f "$home/.bashrc"
pass "the node's own dotfiles, never the host's; ssh.command_timeout bounds each command"

# --- bad input: clear errors ---
action 11 t/nope.sh | expect_fail "$SSHA" "missing script" 'script "t/nope.sh" not found in resources'
action 12 t/echo.sh null '.config.service.action.fields.data = ["t/missing.txt"]' |
  expect_fail "$SSHA" "missing data" 'data file "t/missing.txt" not found'
action 13 t/echo.sh null '.config.service.action.fields.script = "../etc/passwd"' |
  expect_fail "$SSHA" "escaping path" 'not found in resources'
action 14 t/echo.sh null ".config.ssh_host_key = \"$(kv node-2 .ssh_host_key)\"" |
  expect_fail "$SSHA" "wrong host key" "host key of $(kv node-1 .ipaddresses.access_v4):22 does not match"
action 15 t/echo.sh null 'del(.config.ssh_host_key)' | expect_fail "$SSHA" "no host key" "no trust on first use"
action 16 t/echo.sh null ".config.ipaddresses.access_v4 = \"$NET_PREFIX.250\"" |
  expect_fail "$SSHA" "unreachable" "refusing to connect to $NET_PREFIX.250: .*no node listens on exactly $NET_PREFIX.250:22"
action 17 t/echo.sh null '.config.ssh.private_key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"' |
  expect_fail "$SSHA" "bad key" "authentication"
action 18 t/echo.sh null '.config.service.action.fields = {}' | expect_fail "$SSHA" "no script" 'no "script" field'
printf '{"taskId": "1.1.1", "taskName": "install", "config": []}' |
  expect_fail "$SSHA" "bad task JSON" 'field "config": expected an object'
head -c 100 /dev/urandom | expect_fail "$SSHA" "random bytes" "bad task JSON"
# A wrong host key is refused before authentication: the node logged no login.
grep -c "Accepted publickey" "$(node_dir node-1)/sshd.log" > "$T/logins.before"
action 19 t/echo.sh null ".config.ssh_host_key = \"$(kv node-2 .ssh_host_key)\"" | run "$SSHA" || true
[ "$(grep -c "Accepted publickey" "$(node_dir node-1)/sshd.log")" = "$(cat "$T/logins.before")" ] ||
  fail "the automator logged in to a host whose key did not match"
pass "bad input: missing script or data, wrong or missing host key, unreachable host, bad key, bad JSON"

# An unknown macro is refused where the engine expands the task (macro_expand),
# with the value's path: the task never reaches a node with a broken config.
rc=0
jq -cn '{value: {zookeeper: {servers: "%join(map(hosts.service.zookeeper-server,\"$\"),\",\")%"}},
  nodes: {}, self: "node-1"}' | "$DROVER_BUILD_DIR/tests/plugins/drover-test-macro" 2> "$T/macro.err" || rc=$?
[ "$rc" = 1 ] || fail "an unknown macro expanded (rc $rc)"
grep -q 'config.zookeeper.servers: macro "%join(map(hosts.service.zookeeper-server' "$T/macro.err" ||
  fail "unknown macro message: $(cat "$T/macro.err")"
grep -q "unknown macro" "$T/macro.err" || fail "unknown macro message: $(cat "$T/macro.err")"
pass "an unknown macro: $(cat "$T/macro.err")"

# Nothing the automator did put the cluster's key in a log or on the node.
keyline=$(sed -n 2p "$T/cluster_key")
grep -qF "$keyline" "$T/plugins.log" && fail "the private key reached the log"
grep -rqF "$keyline" "$(kv node-1 .node_root)" && fail "the private key reached the node"
pass "ssh automator"
