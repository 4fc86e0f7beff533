/* Vulkan realisation benchmark (bench_device.h): buffer objects, a buffer arena, texture_2d
 * objects and a texture_2d arena (images bound at offsets in one allocation).
 *
 *   bench_vulkan [MODEL.tflite [ITERATIONS [fp16|fp32]]]
 *       (default: pose_landmark_lite.tflite from $TANGRAM_MODEL_CACHE or
 *        ~/.cache/tangram/models; 50 iterations; fp16)
 *
 * One check runs before timing, so the shadow run's pipelines exist and the numbers exclude
 * their creation (the realisation itself never creates pipelines). $TANGRAM_DEVICE picks the
 * device, $TANGRAM_VULKAN_VALIDATION=1 turns the validation layers on (slower). Target: <= 20 ms
 * per create + destroy. Exit status 0 also when no Vulkan device exists (it says so), 1 on
 * failure. */
#define _POSIX_C_SOURCE 200809L
#include "bench_device.h"

int main(int argc, char **argv) {
  static const bench_case cases[] = {
      {"buffer objects", TG_STORAGE_BUFFER, TG_MODE_OBJECTS},
      {"buffer arena", TG_STORAGE_BUFFER, TG_MODE_OFFSETS},
      {"texture_2d objects", TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS},
      {"texture_2d arena", TG_STORAGE_TEXTURE_2D, TG_MODE_OFFSETS},
  };
  return bench_device_main(argc, argv, TG_BACKEND_VULKAN, "bench_vulkan", cases, sizeof cases / sizeof cases[0]);
}
