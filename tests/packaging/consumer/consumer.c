/* A program outside the tree using the installed package: the planner, a device (which pulls
 * in every backend compiled into the library, so missing link dependencies show here), a
 * model's inputs, and the OpenCL and Vulkan headers (which include the Khronos headers). */
#include <stdio.h>
#include <string.h>
#include <tangram/backend.h>
#include <tangram/model.h>
#include <tangram/opencl.h>
#include <tangram/planner.h>
#include <tangram/vulkan.h>

int main(void) {
  tg_usage_record r[2] = {{{16, 1, 1}, 0, 1, 0}, {{16, 1, 1}, 2, 3, 0}};
  tg_plan_options o = {0};
  o.strategy = TG_STRATEGY_BEST;
  tg_plan *p = NULL;
  if (tg_plan_compute(r, 2, 1, &o, NULL, &p) != TG_OK) return 1;
  int ok = p->total == 16 && tg_plan_validate(r, 2, 1, p, 0, NULL, NULL, NULL) == TG_OK;
  printf("consumer: total %llu\n", (unsigned long long)p->total);
  tg_plan_destroy(p);
  const char *graph = "tensor x 1x4x4x3 float32 input\ntensor y 1x4x4x3 float32 output\nop RELU inputs=x outputs=y\n";
  tg_model_inputs *in = NULL;
  if (tg_model_parse_inputs(graph, strlen(graph), "g", NULL, &in, NULL) != TG_OK) return 1;
  ok = ok && in->count == 1 && strcmp(in->inputs[0].name, "x") == 0;
  printf("consumer: input %s, rank %u\n", in->inputs[0].name, in->inputs[0].rank);
  tg_model_inputs_destroy(in);
  tg_device_options d = {0};
  d.backend = TG_BACKEND_HOST;
  tg_device *dev = NULL;
  if (tg_device_open(&d, NULL, &dev, NULL, NULL, NULL) != TG_OK) return 1;
  printf("consumer: device %s\n", tg_device_get_info(dev)->name);
  tg_device_close(dev);
  /* The engine-side entry points resolve (their types come from the Khronos headers). */
  void (*volatile wrap[2])(void) = {(void (*)(void))tg_device_wrap_opencl, (void (*)(void))tg_device_wrap_vulkan};
  ok = ok && wrap[0] != NULL && wrap[1] != NULL;
  return ok ? 0 : 1;
}
