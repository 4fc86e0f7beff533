/* `tangram probe` (tools/cmd_probe.c): device profiles measured with the speed proxies. */
#ifndef TANGRAM_TOOLS_PROBE_CLI_H
#define TANGRAM_TOOLS_PROBE_CLI_H

#include "tangram/profile.h"

/* Measure a profile on the device `backend` (NULL: opencl) / `device` (NULL: prefer a GPU):
 * `repeats` timed runs of the probe graph per storage kind. A kind the device cannot run is
 * left at 0 GB/s with the reason in skipped[kind]. A device that cannot be opened, or a backend
 * without proxies: an error with `err` saying why. */
tg_status tg_cli_probe_measure(const char *backend, const char *device, tg_precision precision, uint32_t repeats,
                               const tg_allocator *alloc, tg_device_profile *profile, char skipped[][160],
                               tg_error_info *err);

/* The subcommand: argv[0] = "probe". */
int tg_cli_probe(int argc, char **argv);

#endif
