#!/usr/bin/env bash
# Estimate against measurement (docs/speed.md): per API, `tangram probe --save` once, then for
# each public model `evaluate --speed` (measured) and `evaluate --speed --profile` (estimated
# from the profile), printed side by side per storage and mode, with the wall time of the
# measured run. A benchmark, not a test: CI never runs it.
#   scripts/speed-estimate.sh [BUILD_DIR]          default build
#   TANGRAM_SPEED_APIS="opencl" ...                 only some APIs (default: opencl vulkan)
#   TANGRAM_SPEED_MODELS="a b" ...                  other models (default: the four public ones)
#   TANGRAM_SPEED_REPEAT=N ...                      timed runs per plan (default 5)
#   --markdown                                      Markdown tables instead of plain text
set -euo pipefail
cd "$(dirname "$0")/.."
markdown=0
args=()
for a in "$@"; do
  if [ "$a" = --markdown ]; then markdown=1; else args+=("$a"); fi
done
build=${args[0]:-build}
cli="$build/tangram"
[ -x "$cli" ] || { echo "speed-estimate: no $cli (build first)" >&2; exit 2; }
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
apis=${TANGRAM_SPEED_APIS:-"opencl vulkan"}
models=${TANGRAM_SPEED_MODELS:-"selfie_segmentation face_detection_short_range hand_landmark_lite pose_landmark_lite"}
repeat=${TANGRAM_SPEED_REPEAT:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for api in $apis; do
  if ! "$cli" probe --backend "$api" --save "$tmp/$api.profile" >"$tmp/$api.probe" 2>&1; then
    echo "speed-estimate: no $api device: $(tail -n 1 "$tmp/$api.probe")" >&2
    continue
  fi
  for m in $models; do
    model="$cache/$m.tflite"
    [ -s "$model" ] || { echo "speed-estimate: $model is not cached (scripts/fetch-models.sh)" >&2; continue; }
    start=$(date +%s.%N)
    "$cli" evaluate "$model" --speed --backend "$api" --repeat "$repeat" --json >"$tmp/$api.$m.measured.json"
    end=$(date +%s.%N)
    "$cli" evaluate "$model" --speed --profile "$tmp/$api.profile" --json >"$tmp/$api.$m.estimated.json"
    echo "$api $m $(echo "$end - $start" | bc)" >>"$tmp/walls"
  done
done

python3 - "$tmp" "$markdown" <<'EOF'
import json, os, sys
tmp, markdown = sys.argv[1], sys.argv[2] == "1"
walls = {}
if os.path.exists(os.path.join(tmp, "walls")):
    for line in open(os.path.join(tmp, "walls")):
        api, model, wall = line.split()
        walls[(api, model)] = float(wall)
def rows(doc):
    out = {}
    for r in doc["results"]:
        if "speed" in r:
            out[(r["storage"], r["mode"])] = (r["bytes"], r["speed"]["median_ms"], r["speed"]["min_ms"], r["speed"]["max_ms"])
    return out
for (api, model), wall in sorted(walls.items()):
    meas = json.load(open(os.path.join(tmp, f"{api}.{model}.measured.json")))
    est = json.load(open(os.path.join(tmp, f"{api}.{model}.estimated.json")))
    m, e = rows(meas), rows(est)
    rec = meas["speed_recommendation"]
    title = f"{model} on {meas['speed_device']} (evaluate --speed: {wall:.1f} s wall)"
    head = ["storage", "mode", "bytes", "measured ms (min-max)", "estimated ms", "est/meas"]
    lines = []
    for key in sorted(set(m) | set(e)):
        b = (m.get(key) or e.get(key))[0]
        ms = f"{m[key][1]:.3f} ({m[key][2]:.3f}-{m[key][3]:.3f})" if key in m else "skipped"
        es = f"{e[key][1]:.3f}" if key in e else "skipped"
        ratio = f"{e[key][1] / m[key][1]:.2f}" if key in m and key in e and m[key][1] > 0 else "-"
        lines.append([key[0], key[1], str(b), ms, es, ratio])
    fast, small = rec.get("fastest"), rec.get("smallest")
    foot = (f"fastest: {fast['storage']} {fast['mode']} ({fast['median_ms']:.3f} ms); "
            f"smallest: {small['storage']} {small['mode']} ({small['bytes']} B)") if fast else "nothing timed"
    if markdown:
        print(f"\n**{title}**\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines: print("| " + " | ".join(l) + " |")
        print(f"\n{foot}")
    else:
        print(f"\n{title}")
        w = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
        for l in [head] + lines: print("  ".join(x.ljust(w[i]) for i, x in enumerate(l)))
        print(foot)
EOF
