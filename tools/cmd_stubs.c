/* Commands whose implementation has not landed yet. */
#include "tools/cli.h"
int tg_cli_evaluate(int argc, char **argv) { (void)argc; (void)argv; tg_cli_error("evaluate: not available in this build"); return TG_EXIT_USAGE; }
int tg_cli_schedule(int argc, char **argv) { (void)argc; (void)argv; tg_cli_error("schedule: not available in this build"); return TG_EXIT_USAGE; }
