/* Choosing a backend at run time.
 *
 * Opens a device with TG_BACKEND_AUTO: Tangram tries Vulkan, then OpenCL, then plain host
 * memory, and tells you why it passed over each one (no loader library, no device, ...).
 * TANGRAM_BACKEND=vulkan|opencl|host overrides the choice.
 *
 *   choose_backend            */
#include <stdio.h>

#include "tangram/backend.h"

int main(void) {
  tg_device_options options = {0}; /* zero = defaults: backend auto, first suitable device */
  tg_device *device = NULL;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t skipped_count = 0;
  tg_error_info err;
  tg_status st = tg_device_open(&options, NULL, &device, skipped, &skipped_count, &err);

  for (size_t i = 0; i < skipped_count; ++i)
    printf("skipped %-7s %s\n", tg_backend_name(skipped[i].backend), skipped[i].reason);
  if (st != TG_OK) {
    fprintf(stderr, "no device: %s\n", err.message);
    return 1;
  }

  const tg_device_info *info = tg_device_get_info(device);
  printf("chose   %-7s \"%s\" (%s)\n", tg_backend_name(info->backend), info->name, info->kind);
  printf("        driver: %s\n", info->driver);
  printf("        memory budget %llu MiB, largest allocation %llu MiB\n",
         (unsigned long long)(info->memory_budget >> 20), (unsigned long long)(info->max_allocation >> 20));
  printf("        images: %s (fp16 %s), images inside an arena: %s, out-of-order: %s\n",
         info->images ? "yes" : "no", info->fp16_images ? "yes" : "no",
         info->arena_images ? "yes" : "no", info->out_of_order ? "yes" : "no");
  printf("        buffer offset alignment %llu bytes\n", (unsigned long long)info->buffer_alignment);
  tg_device_close(device);
  return 0;
}
