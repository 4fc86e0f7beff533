/* `tangram probe`: a device profile (tangram/profile.h) measured with the speed proxies. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "tangram/layout.h"
#include "tangram/profile.h"
#include "tangram/report.h"
#include "tangram/speed.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/probe_cli.h"

static void probe_usage(FILE *to) {
  fputs("usage: tangram probe [--backend opencl|vulkan] [--device N|NAME] [--precision fp32|fp16]\n"
        "                     [--repeat N] [--save FILE] [--json]\n"
        "\n"
        "Measure a device profile: the bandwidth (GB/s) of the speed proxies per storage kind\n"
        "(buffer, texture_2d, texture_array, texture_3d, image_buffer) and access pattern (linear, 2D\n"
        "neighbourhood, channel-strided) on 4 MiB tensors (fp32), the time of one dispatch, and the\n"
        "device's limits and alignments. --save writes it as a profile file for\n"
        "`tangram evaluate MODEL --speed --profile FILE` (estimates without the device).\n"
        "Default: opencl, fp32, 5 timed runs after 1 warm-up.\n"
        "Exit status: 0 ok, 1 no device or a device failure, 2 bad usage.\n",
        to);
}

/* The probe graph: X (1x256x256x16) made from an input, then read linearly (ADD), as a 3x3
 * neighbourhood (DEPTHWISE_CONV_2D) and channel by channel (1x1 CONV_2D); a one-texel op
 * measures a dispatch; SINK keeps everything planned. */
enum { OP_GEN, OP_LINEAR, OP_NEIGHBOURHOOD, OP_CHANNEL, OP_TINY, OP_SINK, OP_COUNT };

static tg_status probe_graph(const tg_allocator *alloc, tg_graph **out) {
  tg_graph *g = NULL;
  tg_status st = tg_graph_create(10, OP_COUNT, alloc, &g);
  if (st != TG_OK) return st;
  static const int64_t big[4] = {1, 256, 256, 16}, dw[4] = {1, 3, 3, 16}, pw[4] = {16, 1, 1, 16},
                       tiny[4] = {1, 1, 1, 4};
  static const struct {
    const char *name;
    const int64_t *shape;
    uint32_t flags;
  } t[10] = {{"in", big, TG_TENSOR_INPUT}, {"x", big, 0},          {"linear", big, 0},
             {"neighbourhood", big, 0},    {"channel", big, 0},    {"dw_w", dw, TG_TENSOR_CONSTANT},
             {"pw_w", pw, TG_TENSOR_CONSTANT}, {"tiny_in", tiny, TG_TENSOR_INPUT}, {"tiny", tiny, 0},
             {"out", tiny, TG_TENSOR_OUTPUT}};
  for (size_t i = 0; i < 10 && st == TG_OK; ++i)
    st = tg_graph_set_tensor(g, i, t[i].name, 4, t[i].shape, TG_DTYPE_FLOAT32, t[i].flags);
  static const int32_t in0[] = {0}, x[] = {1}, lin[] = {2}, dwin[] = {1, 5}, nb[] = {3}, pwin[] = {1, 6}, ch[] = {4},
                       tin[] = {7}, tt[] = {8}, sink[] = {2, 3, 4, 8}, o[] = {9};
  if (st == TG_OK) st = tg_graph_set_op(g, OP_GEN, "GEN", 1, in0, 1, x);
  if (st == TG_OK) st = tg_graph_set_op(g, OP_LINEAR, "ADD", 1, x, 1, lin);
  if (st == TG_OK) st = tg_graph_set_op(g, OP_NEIGHBOURHOOD, "DEPTHWISE_CONV_2D", 2, dwin, 1, nb);
  if (st == TG_OK) st = tg_graph_set_op(g, OP_CHANNEL, "CONV_2D", 2, pwin, 1, ch);
  if (st == TG_OK) st = tg_graph_set_op(g, OP_TINY, "GEN", 1, tin, 1, tt);
  if (st == TG_OK) st = tg_graph_set_op(g, OP_SINK, "SINK", 4, sink, 1, o);
  static const uint32_t ins[] = {0, 7}, outs[] = {9};
  if (st == TG_OK) st = tg_graph_set_io(g, 2, ins, 1, outs);
  if (st != TG_OK) {
    tg_graph_destroy(g);
    return st;
  }
  *out = g;
  return TG_OK;
}

/* Time the probe graph in one storage (objects mode, no reuse) and fill that kind's row. */
static tg_status probe_kind(tg_device *dev, const tg_graph *g, const tg_lifetimes *lt, tg_storage storage,
                            tg_precision precision, uint32_t repeats, const tg_allocator *alloc,
                            tg_device_profile *p, double *dispatch_ms, tg_error_info *err) {
  tg_model_records *mr = NULL;
  tg_tensor_resource *res = NULL;
  tg_plan *plan = NULL;
  tg_realization *z = NULL;
  tg_status st = tg_model_records_create(g, lt, storage, precision, NULL, alloc, &mr, err);
  if (st == TG_OK) st = tg_cli_resources(mr->records, storage, precision, alloc, &res);
  if (st == TG_OK) {
    tg_plan_options opt;
    memset(&opt, 0, sizeof opt);
    opt.mode = TG_MODE_OBJECTS;
    opt.strategy = TG_STRATEGY_NAIVE;
    st = tg_plan_compute(mr->records->records, mr->records->count, mr->records->dims, &opt, alloc, &plan);
  }
  if (st == TG_OK) {
    tg_realize_desc d = {
        .plan = plan, .records = mr->records->records, .record_count = mr->records->count,
        .dims = mr->records->dims, .resources = res, .precision = precision
    };
    st = tg_realization_create(dev, &d, alloc, &z, err);
  }
  double op_ms[OP_COUNT] = {0};
  if (st == TG_OK) {
    tg_speed_part part = {z, mr->tensor_of};
    tg_speed_desc d = {
        .graph = g, .parts = &part, .part_count = 1, .repeats = repeats, .warmup = 1, .op_ms = op_ms
    };
    tg_speed_result r;
    st = tg_realization_time(&d, &r, err);
  }
  if (st == TG_OK) {
    static const uint32_t big[3] = {256, 256, 4};
    static const uint32_t in[1][3] = {{256, 256, 4}};
    uint32_t tb = tg_precision_texel_bytes(precision);
    static const int op_of[TG_ACCESS_COUNT] = {OP_LINEAR, OP_NEIGHBOURHOOD, OP_CHANNEL};
    static const tg_op_class class_of[TG_ACCESS_COUNT] = {TG_OP_CLASS_ELEMENTWISE, TG_OP_CLASS_STENCIL,
                                                          TG_OP_CLASS_CHANNEL_MIXING};
    tg_profile_kind kind = tg_profile_kind_of(storage);
    for (int a = 0; a < TG_ACCESS_COUNT; ++a) {
      double ms = op_ms[op_of[a]] - op_ms[OP_TINY];
      if (ms <= 0) ms = op_ms[op_of[a]];
      uint64_t bytes = tg_proxy_bytes(class_of[a], 3, big, in, 1, tb);
      p->gbps[kind][a] = ms > 0 ? (double)bytes / (ms / 1000.0) / 1e9 : 0;
    }
    if (*dispatch_ms <= 0 || op_ms[OP_TINY] < *dispatch_ms) *dispatch_ms = op_ms[OP_TINY];
  }
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  tg__free(alloc, res);
  tg_model_records_destroy(mr);
  return st;
}

tg_status tg_cli_probe_measure(const char *backend, const char *device, tg_precision precision, uint32_t repeats,
                               const tg_allocator *alloc, tg_device_profile *p, char skipped[][160],
                               tg_error_info *err) {
  memset(p, 0, sizeof *p);
  tg_device_options opt;
  memset(&opt, 0, sizeof opt);
  opt.backend = TG_BACKEND_OPENCL;
  if (backend && tg_backend_from_name(backend, &opt.backend) != TG_OK)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "unknown backend '%s'", backend);
  opt.device = device;
  tg_device *dev = NULL;
  tg_status st = tg_device_open(&opt, alloc, &dev, NULL, NULL, err);
  if (st != TG_OK) return st;
  const tg_device_info *info = tg_device_get_info(dev);
  snprintf(p->backend, sizeof p->backend, "%s", tg_backend_name(info->backend));
  snprintf(p->device, sizeof p->device, "%s", info->name);
  p->precision = precision;
  p->limits = info->limits;
  p->max_allocation = info->max_allocation;
  p->buffer_alignment = info->buffer_alignment;
  p->image_alignment = info->image_alignment;
  p->images = info->images;
  p->arena_images = info->arena_images;
  tg_graph *g = NULL;
  tg_lifetimes *lt = NULL;
  if ((st = probe_graph(alloc, &g)) != TG_OK ||
      (st = tg_graph_compute_lifetimes(g, NULL, alloc, &lt, err)) != TG_OK) {
    tg__error(err, st, "probe: the probe graph: %s", tg_status_string(st));
    goto done;
  }
  static const tg_storage k_kinds[TG_PROFILE_KIND_COUNT] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                                            TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D,
                                                            TG_STORAGE_IMAGE_BUFFER};
  double dispatch_ms = 0;
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k) {
    skipped[k][0] = '\0';
    if (k > 0 && k != TG_PROFILE_IMAGE_BUFFER && !info->images) {
      snprintf(skipped[k], 160, "the device has no images");
      continue;
    }
    tg_error_info kerr = {{0}};
    tg_status ks = probe_kind(dev, g, lt, k_kinds[k], precision, repeats, alloc, p, &dispatch_ms, &kerr);
    if (ks == TG_ERROR_UNSUPPORTED && k == 0) {
      st = tg__error(err, ks, "%s", kerr.message);
      goto done;
    }
    if (ks != TG_OK) snprintf(skipped[k], 160, "%.150s", kerr.message[0] ? kerr.message : tg_status_string(ks));
  }
  p->dispatch_us = dispatch_ms * 1000.0;
  st = TG_OK;
done:
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
  tg_device_close(dev);
  return st;
}

int tg_cli_probe(int argc, char **argv) {
  const char *backend = NULL, *device = NULL, *save = NULL, *repeat = NULL, *precision_name = NULL;
  int json = 0;
  for (int i = 1; i < argc;) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      probe_usage(stdout);
      return TG_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
      ++i;
      continue;
    }
    static const char *const names[] = {"--backend", "--device", "--save", "--repeat", "--precision"};
    const char **const targets[] = {&backend, &device, &save, &repeat, &precision_name};
    size_t which;
    int m = tg_cli_option_table(argc, argv, &i, names, targets, 5, &which);
    if (m < 0) return TG_EXIT_USAGE;
    if (m == 0) {
      tg_cli_error("probe: unknown argument '%s' (see tangram probe --help)", argv[i]);
      return TG_EXIT_USAGE;
    }
  }
  if (backend && strcmp(backend, "opencl") != 0 && strcmp(backend, "vulkan") != 0) {
    tg_cli_error("probe: --backend must be opencl or vulkan, not '%s'", backend);
    return TG_EXIT_USAGE;
  }
  uint64_t n = 5;
  if (repeat && (!tg_cli_parse_u64(repeat, 0, &n) || n == 0 || n > 100000)) {
    tg_cli_error("probe: --repeat must be a whole number from 1 to 100000, not '%s'", repeat);
    return TG_EXIT_USAGE;
  }
  tg_precision precision = TG_PRECISION_FP32;
  if (precision_name && tg_precision_from_name(precision_name, &precision) != TG_OK) {
    tg_cli_error("probe: --precision must be fp32 or fp16, not '%s'", precision_name);
    return TG_EXIT_USAGE;
  }
  tg_failing_allocator fa;
  const tg_allocator *alloc = tg_cli_allocator(&fa);
  tg_device_profile p;
  char skipped[TG_PROFILE_KIND_COUNT][160];
  tg_error_info err = {{0}};
  tg_status st = tg_cli_probe_measure(backend, device, precision, (uint32_t)n, alloc, &p, skipped, &err);
  if (st != TG_OK) {
    tg_cli_error("probe: %s", err.message[0] ? err.message : tg_status_string(st));
    return TG_EXIT_FAILURE;
  }
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (json) {
    tg__strbuf_puts(&b, "{\"backend\":");
    tg__strbuf_json_string(&b, p.backend);
    tg__strbuf_puts(&b, ",\"device\":");
    tg__strbuf_json_string(&b, p.device);
    tg__strbuf_printf(&b, ",\"version\":%d,\"precision\":\"%s\",\"dispatch_us\":%.6g,\"bandwidth_gbps\":{",
                      TG_PROFILE_VERSION, tg_precision_name(p.precision), p.dispatch_us);
    for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k) {
      tg__strbuf_printf(&b, "%s\"%s\":", k ? "," : "", tg_profile_kind_name((tg_profile_kind)k));
      if (skipped[k][0]) {
        tg__strbuf_puts(&b, "{\"skipped\":");
        tg__strbuf_json_string(&b, skipped[k]);
        tg__strbuf_puts(&b, "}");
        continue;
      }
      tg__strbuf_puts(&b, "{");
      for (int a = 0; a < TG_ACCESS_COUNT; ++a)
        tg__strbuf_printf(&b, "%s\"%s\":%.6g", a ? "," : "", tg_access_pattern_name((tg_access_pattern)a), p.gbps[k][a]);
      tg__strbuf_puts(&b, "}");
    }
    const tg_device_limits *l = &p.limits;
    tg__strbuf_printf(&b, "},\"limits\":{\"max_buffer_bytes\":%llu,\"max_image_buffer_texels\":%llu,"
                          "\"max_texture_2d\":[%llu,%llu],\"max_texture_3d\":[%llu,%llu,%llu],"
                          "\"max_texture_array_layers\":%llu,\"max_allocation\":%llu},"
                          "\"alignments\":{\"buffer\":%llu,\"image\":%llu},\"images\":%s,\"arena_images\":%s}\n",
                      (unsigned long long)l->max_buffer_bytes, (unsigned long long)l->max_image_buffer_texels,
                      (unsigned long long)l->max_texture_2d_width, (unsigned long long)l->max_texture_2d_height,
                      (unsigned long long)l->max_texture_3d_width, (unsigned long long)l->max_texture_3d_height,
                      (unsigned long long)l->max_texture_3d_depth, (unsigned long long)l->max_texture_array_layers,
                      (unsigned long long)p.max_allocation, (unsigned long long)p.buffer_alignment,
                      (unsigned long long)p.image_alignment, p.images ? "true" : "false",
                      p.arena_images ? "true" : "false");
  } else {
    tg__strbuf_printf(&b, "%s: %s (%s)\n\nbandwidth of the speed proxies, GB/s (logical bytes / device time):\n",
                      p.backend, p.device, tg_precision_name(p.precision));
    tg__strbuf_printf(&b, "%-14s %14s %14s %16s\n", "kind", "linear", "neighbourhood", "channel_strided");
    for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k) {
      tg__strbuf_printf(&b, "%-14s", tg_profile_kind_name((tg_profile_kind)k));
      if (skipped[k][0]) {
        tg__strbuf_printf(&b, " skipped: %s\n", skipped[k]);
        continue;
      }
      tg__strbuf_printf(&b, " %14.3f %14.3f %16.3f\n", p.gbps[k][0], p.gbps[k][1], p.gbps[k][2]);
    }
    char h[32];
    tg__strbuf_printf(&b, "\none dispatch: %.1f us\nlimits: buffer %s, image buffer %llu texels, 2D %llux%llu, "
                          "3D %llux%llux%llu, %llu array layers; largest allocation %llu B\n"
                          "alignments: buffer %llu B, image %llu B; images %s, images in one arena %s\n",
                      p.dispatch_us, tg_report_format_bytes(p.limits.max_buffer_bytes, h, sizeof h),
                      (unsigned long long)p.limits.max_image_buffer_texels,
                      (unsigned long long)p.limits.max_texture_2d_width, (unsigned long long)p.limits.max_texture_2d_height,
                      (unsigned long long)p.limits.max_texture_3d_width, (unsigned long long)p.limits.max_texture_3d_height,
                      (unsigned long long)p.limits.max_texture_3d_depth,
                      (unsigned long long)p.limits.max_texture_array_layers,
                      (unsigned long long)p.max_allocation, (unsigned long long)p.buffer_alignment,
                      (unsigned long long)p.image_alignment, p.images ? "yes" : "no", p.arena_images ? "yes" : "no");
  }
  int code = tg_cli_print_report(&b, TG_EXIT_OK);
  if (save && code == TG_EXIT_OK) {
    char *text = NULL;
    size_t len = 0;
    if (tg_device_profile_write(&p, alloc, &text, &len) != TG_OK) {
      tg_cli_error("probe: out of memory");
      return TG_EXIT_FAILURE;
    }
    if (!tg_cli_write_file(save, text, len)) code = TG_EXIT_FAILURE;
    tg_report_free(alloc, text);
  }
  return code;
}
