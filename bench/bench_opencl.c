/* OpenCL realisation benchmark (bench_device.h): buffer objects, buffer offsets (one arena of
 * sub-buffers) and texture_2d objects.
 *
 *   bench_opencl [MODEL.tflite [ITERATIONS [fp16|fp32]]]
 *       (default: pose_landmark_lite.tflite from $TANGRAM_MODEL_CACHE or
 *        ~/.cache/tangram/models; 50 iterations; fp16)
 *
 * The shadow run's kernels are compiled (and one check run) before timing, so the numbers
 * exclude the first kernel compile. Target: <= 20 ms per create + destroy. Exit status 0 also
 * when no OpenCL device exists (it says so), 1 on failure. */
#define _POSIX_C_SOURCE 200809L
#include "bench_device.h"

int main(int argc, char **argv) {
  static const bench_case cases[] = {
      {"buffer objects", TG_STORAGE_BUFFER, TG_MODE_OBJECTS},
      {"buffer offsets", TG_STORAGE_BUFFER, TG_MODE_OFFSETS},
      {"texture_2d objects", TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS},
  };
  return bench_device_main(argc, argv, TG_BACKEND_OPENCL, "bench_opencl", cases, sizeof cases / sizeof cases[0]);
}
