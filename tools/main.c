/* `tangram`: plan GPU memory for a model's tensors, evaluate storage choices, show the schedule,
 * and realise plans on a device. */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/probe_cli.h"

static void usage(FILE *to) {
  fputs(
      "usage: tangram COMMAND [options]\n"
      "\n"
      "commands:\n"
      "  plan FILE       plan usage records (CSV) or a model: totals per strategy, bounds, validity\n"
      "  evaluate MODEL  every storage x mode x strategy for a model, with a recommendation\n"
      "  schedule MODEL  execution waves and the waits that memory reuse adds\n"
      "  run MODEL       plan, allocate on a device, and check nothing is corrupted\n"
      "  inputs MODEL    a model's inputs: names, dimensions, which are dynamic (no planning)\n"
      "  probe           measure a device profile (bandwidth per storage and access pattern)\n"
      "\n"
      "`tangram COMMAND --help` describes a command's options.\n",
      to);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return TG_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return TG_EXIT_OK;
  }
  static const struct { const char *name; int (*fn)(int, char **); } k_commands[] = {
      {"plan", tg_cli_plan},
      {"evaluate", tg_cli_evaluate},
      {"schedule", tg_cli_schedule},
      {"run", tg_cli_run},
      {"inputs", tg_cli_inputs},
      {"probe", tg_cli_probe},
  };
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; ++i)
    if (strcmp(cmd, k_commands[i].name) == 0) return k_commands[i].fn(argc - 1, argv + 1);
  tg_cli_error("unknown command '%s'", cmd);
  usage(stderr);
  return TG_EXIT_USAGE;
}
