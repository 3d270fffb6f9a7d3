# shellcheck shell=bash
# bench/lib.sh: the start of every benchmark that runs the engine against the stack of
# scripts/with-stack (sourced right after `set -euo pipefail`): DROVER_SOURCE_DIR (this
# checkout unless set) and DROVER_BUILD_DIR (default build-rel, a release build) exported,
# then the shell test library that the integration tests use too (testlib/): test-lib.sh
# (processes, ports, the stack's servers), api.sh (the API) and engine.sh (droverd,
# workers, jobs; ZooKeeper's four-letter words).
export DROVER_SOURCE_DIR=${DROVER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export DROVER_BUILD_DIR=${DROVER_BUILD_DIR:-$DROVER_SOURCE_DIR/build-rel}
# shellcheck source=testlib/test-lib.sh
. "$DROVER_SOURCE_DIR/testlib/test-lib.sh"
# shellcheck source=testlib/api.sh
. "$DROVER_SOURCE_DIR/testlib/api.sh"
# shellcheck source=testlib/engine.sh
. "$DROVER_SOURCE_DIR/testlib/engine.sh"
