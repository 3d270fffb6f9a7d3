#!/bin/bash
# base/remove: undo base/install (the other services remove their own directories).
. lib/drover.sh
cat > /dev/null
rm -f "$R/srv/drover/.base"
rmdir "$R/srv/drover" 2> /dev/null || true
say "base removed"
