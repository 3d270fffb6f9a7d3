# shellcheck shell=bash
# bench/lib.sh: the start of every benchmark that runs the engine against the stack of
# scripts/with-stack (sourced right after `set -euo pipefail`): DROVER_SOURCE_DIR (this
# checkout unless set) and DROVER_BUILD_DIR (default build-rel, a release build) exported,
# then integration's libraries sourced: lib.sh (processes, ports, the stack's servers),
# api/api_lib.sh (the API) and engine/engine_lib.sh (droverd, workers, jobs; ZooKeeper's
# four-letter words).
export DROVER_SOURCE_DIR=${DROVER_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export DROVER_BUILD_DIR=${DROVER_BUILD_DIR:-$DROVER_SOURCE_DIR/build-rel}
. "$DROVER_SOURCE_DIR/integration/lib.sh"
. "$DROVER_SOURCE_DIR/integration/api/api_lib.sh"
. "$DROVER_SOURCE_DIR/integration/engine/engine_lib.sh"
