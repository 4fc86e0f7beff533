#!/usr/bin/env bash
# Print every plan the CLI makes on the public models' records (tests/data/records) and on the
# cached public models, with timing fields removed, so that two builds can be diffed:
#   scripts/plan-snapshot.sh build/tangram > before.txt   # ... change, rebuild ...
#   scripts/plan-snapshot.sh build/tangram > after.txt && diff before.txt after.txt
# Deterministic: --time-limit 0, so no search that the clock could stop (the default runs
# a short one).
set -euo pipefail
cli=$(realpath "${1:?usage: plan-snapshot.sh PATH/TO/tangram}")
cd "$(dirname "$0")/.."
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
strip() { sed -E 's/"[a-z_]*_(us|ms)":[0-9.e+-]+,?//g'; }
for csv in tests/data/records/*.csv; do
  modes="objects"
  case "$csv" in *.buffer.csv) modes="objects offsets" ;; esac
  for mode in $modes; do
    echo "== $csv $mode"
    "$cli" plan "$csv" --strategy all --mode "$mode" --time-limit 0 --json | strip
  done
done
for model in "$cache"/*.tflite; do
  [ -e "$model" ] || continue
  for storage in buffer texture_2d texture_3d; do
    echo "== $(basename "$model") $storage"
    "$cli" plan "$model" --storage "$storage" --strategy all --policy all --time-limit 0 --json | strip
  done
done
