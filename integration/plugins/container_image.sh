#!/usr/bin/env bash
# The container nodes' image (scripts/image), built once per run of the suite and reused:
# the fixture the container tests require (FIXTURES_SETUP container_image). Built, it is
# reused at once; a second build is a no-op.
. "$DROVER_SOURCE_DIR/testlib/test-lib.sh"

dir=${DROVER_IMAGE_DIR:-/var/cache/drover/images}
start=$(date +%s)
"$DROVER_SOURCE_DIR/scripts/image" --dir "$dir" > "$T/image.out" 2> "$T/image.err" ||
  fail "scripts/image failed: $(tail -n 5 "$T/image.err")"
[ "$(cat "$T/image.out")" = "$dir/debian12" ] || fail "scripts/image printed $(cat "$T/image.out")"
for f in usr/sbin/sshd usr/share/java/zookeeper.jar usr/bin/java usr/sbin/nginx usr/sbin/haproxy; do
  [ -e "$dir/debian12/rootfs/$f" ] || fail "the image lacks /$f"
done
ls "$dir"/debian12/rootfs/etc/ssh/ssh_host_* > /dev/null 2>&1 && fail "the image holds host keys"
[ "$(stat -c %u "$dir/debian12/rootfs/etc/passwd")" = "$(jq -r .idmap_base "$dir/debian12/image.json")" ] ||
  fail "the image is not shifted into the nodes' ids"
pass "image $dir/debian12 ready in $(($(date +%s) - start)) s ($(jq -r .built "$dir/debian12/image.json"))"
"$DROVER_SOURCE_DIR/scripts/image" --dir "$dir" 2> "$T/image2.err" > /dev/null || fail "a second build failed"
grep -q reusing "$T/image2.err" || fail "a second build did not reuse the image: $(cat "$T/image2.err")"
pass "container image"
