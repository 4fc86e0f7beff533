#!/usr/bin/env bash
# Run-to-run stability of `evaluate --speed` (docs/speed.md): K runs of one model on one API;
# per storage and mode the K medians and their spread (max / min), so "medians within 20% of
# each other on a quiet machine" can be checked. Prints the load average before and after: on
# CPU drivers the device timestamps include preemption by whatever else the machine runs.
# A benchmark, not a test: CI never runs it.
#   scripts/speed-stability.sh [BUILD_DIR] [MODEL] [API] [K]
#     defaults: build, face_detection_short_range, opencl, 5
#   TANGRAM_SPEED_REPEAT=N     timed runs per plan inside each evaluate (default: evaluate's)
#   --markdown                 a Markdown table instead of plain text
# "Quiet" is measured too: a fixed CPU workload (SHA-256 of 64 MiB on every CPU at once, as
# the CPU drivers use them all) is timed before and after each run; when its own spread passes 1.10 the machine was not quiet, and the medians'
# spread says more about the machine than about Tangram.
# Exit status: 0 when every spread is within 1.20, 1 when one is not on a quiet machine,
# 2 on bad input, 3 when one is not and the machine was not quiet (inconclusive).
set -euo pipefail
cd "$(dirname "$0")/.."
markdown=0
args=()
for a in "$@"; do
  if [ "$a" = --markdown ]; then markdown=1; else args+=("$a"); fi
done
build=${args[0]:-build}
model=${args[1]:-face_detection_short_range}
api=${args[2]:-opencl}
k=${args[3]:-5}
cli="$build/tangram"
[ -x "$cli" ] || { echo "speed-stability: no $cli (build first)" >&2; exit 2; }
case "$k" in '' | *[!0-9]* | 0 | 1) echo "speed-stability: K must be a whole number >= 2, not '$k'" >&2; exit 2 ;; esac
case "$api" in opencl | vulkan) ;; *) echo "speed-stability: API must be opencl or vulkan, not '$api'" >&2; exit 2 ;; esac
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
path="$model"
[ -f "$path" ] || path="$cache/$model.tflite"
[ -s "$path" ] || { echo "speed-stability: no model '$model' (nor $path)" >&2; exit 2; }
repeat=()
[ -n "${TANGRAM_SPEED_REPEAT:-}" ] && repeat=(--repeat "$TANGRAM_SPEED_REPEAT")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s.%N)
reference() {
  python3 -c 'import hashlib, os, threading, time
d = bytes(64 << 20)
ts = [threading.Thread(target=lambda: hashlib.sha256(d).digest()) for _ in range(os.cpu_count() or 1)]
t = time.perf_counter()
for x in ts: x.start()
for x in ts: x.join()
print(time.perf_counter() - t)' >>"$tmp/reference"
}
for i in $(seq 1 "$k"); do
  reference
  "$cli" evaluate "$path" --speed --backend "$api" "${repeat[@]}" --json >"$tmp/run$i.json"
  reference
done
end=$(date +%s.%N)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp" "$k" "$markdown" "$model" "$api" "$load_before" "$load_after" "$(echo "$end - $start" | bc)" \
  "$(nproc)" <<'EOF'
import json, os, sys
tmp, k, markdown, model, api, lb, la, wall, cpus = sys.argv[1:10]
k, markdown = int(k), markdown == "1"
runs = [json.load(open(os.path.join(tmp, f"run{i}.json"))) for i in range(1, k + 1)]
med = {}
for doc in runs:
    for r in doc["results"]:
        if "speed" in r:
            med.setdefault((r["storage"], r["mode"]), []).append(r["speed"]["median_ms"])
title = (f"{model} on {runs[0]['speed_device']}: {k} runs of evaluate --speed in {float(wall):.1f} s; "
         f"load average {lb} before, {la} after ({cpus} CPUs)")
head = ["storage", "mode", "medians ms", "spread max/min", "within 20%"]
lines, worst = [], 1.0
for key in sorted(med):
    v = med[key]
    spread = max(v) / min(v) if len(v) == k and min(v) > 0 else float("inf")
    worst = max(worst, spread)
    lines.append([key[0], key[1], " ".join(f"{x:.2f}" for x in v), f"{spread:.2f}",
                  "yes" if spread <= 1.2 else "no"])
ref = [float(x) for x in open(os.path.join(tmp, "reference")).read().split()]
ref_spread = max(ref) / min(ref) if ref and min(ref) > 0 else float("inf")
quiet = ref_spread <= 1.10
foot = (f"worst spread {worst:.2f}: " + ("every storage within 20%" if worst <= 1.2 else "NOT within 20%") +
        f"; a fixed CPU workload (SHA-256 of 64 MiB per CPU, {len(ref)} times: {min(ref) * 1000:.0f}-{max(ref) * 1000:.0f} ms)"
        f" spread {ref_spread:.2f}: " + ("the machine was quiet" if quiet else "the machine was NOT quiet (over 1.10)"))
if markdown:
    print(f"**{title}**\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for l in lines: print("| " + " | ".join(l) + " |")
    print(f"\n{foot}")
else:
    print(title)
    w = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
    for l in [head] + lines: print("  ".join(x.ljust(w[i]) for i, x in enumerate(l)))
    print(foot)
sys.exit(0 if worst <= 1.2 else 1 if quiet else 3)
EOF
