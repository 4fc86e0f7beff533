/* A program outside the tree using the installed package. */
#include <stdio.h>
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
  return ok ? 0 : 1;
}
