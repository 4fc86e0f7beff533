# Sourced by scripts/test.sh and scripts/test-deep.sh: the model and kernel caches, the job
# count, the stage lines, and TANGRAM_WERROR (off unless CI sets it).
export TANGRAM_MODEL_CACHE="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/pocl}"
mkdir -p "$POCL_CACHE_DIR"
jobs=$(nproc 2>/dev/null || echo 2)
# Each stage's line says when it starts, in seconds since the script began (where CI time goes).
stage() { echo "=== [${SECONDS}s] $*"; }
export TANGRAM_WERROR="${TANGRAM_WERROR:-OFF}"
