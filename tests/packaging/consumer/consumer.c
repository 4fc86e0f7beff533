/* A program outside the tree using the installed package: the planner, and a device (which
 * pulls in every backend compiled into the library, so missing link dependencies show here). */
#include <stdio.h>
#include <tangram/backend.h>
#include <tangram/planner.h>

int main(void) {
  tg_usage_record r[2] = {{{16, 1, 1}, 0, 1, 0}, {{16, 1, 1}, 2, 3, 0}};
  tg_plan_options o = {0};
  o.strategy = TG_STRATEGY_BEST;
  tg_plan *p = NULL;
  if (tg_plan_compute(r, 2, 1, &o, NULL, &p) != TG_OK) return 1;
  int ok = p->total == 16 && tg_plan_validate(r, 2, 1, p, 0, NULL, NULL, NULL) == TG_OK;
  printf("consumer: total %llu\n", (unsigned long long)p->total);
  tg_plan_destroy(p);
  tg_device_options d = {0};
  d.backend = TG_BACKEND_HOST;
  tg_device *dev = NULL;
  if (tg_device_open(&d, NULL, &dev, NULL, NULL, NULL) != TG_OK) return 1;
  printf("consumer: device %s\n", tg_device_get_info(dev)->name);
  tg_device_close(dev);
  return ok ? 0 : 1;
}
