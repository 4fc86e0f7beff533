/* A plan drawn as an SVG memory timeline, and a plan exported as CSV. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "core/internal.h"
#include "tangram/report.h"

/* Canvas: a fixed size, so charts of different models compare at a glance and a headless
 * browser screenshot of 1700 x 1000 shows all of it. */
enum {
  CANVAS_W = 1700,
  CANVAS_H = 1000,
  MARGIN_LEFT = 104,
  MARGIN_RIGHT = 36,
  MARGIN_TOP = 74,
  MARGIN_BOTTOM = 80,
  PLOT_W = CANVAS_W - MARGIN_LEFT - MARGIN_RIGHT,
  PLOT_H = CANVAS_H - MARGIN_TOP - MARGIN_BOTTOM
};

/* Tableau 10: distinct, print-safe, readable with dark text. */
static const char *const k_palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

void tg_report_free(const tg_allocator *alloc, char *text) {
  if (text == NULL) return;
  tg__free(tg__alloc_or_default(alloc), text);
}

/* Length of the valid UTF-8 sequence at `p` (1..4), or 0 when it is not valid. */
static size_t utf8_sequence(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  /* overlong */
    if (c == 0xED) hi = 0x9F;  /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

/* Append at most `max_bytes` of `s` escaped for XML text and attributes. Invalid UTF-8 and
 * control characters become '?': tensor names come from files, and one bad byte would make
 * the whole document unreadable. */
static void xml_escaped(tg__strbuf *b, const char *s, size_t max_bytes) {
  const unsigned char *p = (const unsigned char *)s;
  size_t used = 0;
  while (*p && used < max_bytes) {
    unsigned c = *p;
    if (c < 0x80) {
      switch (c) {
        case '<': tg__strbuf_puts(b, "&lt;"); break;
        case '>': tg__strbuf_puts(b, "&gt;"); break;
        case '&': tg__strbuf_puts(b, "&amp;"); break;
        case '"': tg__strbuf_puts(b, "&quot;"); break;
        case '\'': tg__strbuf_puts(b, "&apos;"); break;
        default:
          if (c < 0x20 || c == 0x7F) tg__strbuf_puts(b, "?");
          else tg__strbuf_append(b, (const char *)p, 1);
      }
      ++p;
      ++used;
      continue;
    }
    size_t n = utf8_sequence(p);
    if (n == 0) {
      tg__strbuf_puts(b, "?");
      ++p;
      ++used;
    } else {
      if (used + n > max_bytes) break;
      tg__strbuf_append(b, (const char *)p, n);
      p += n;
      used += n;
    }
  }
}

/* A round step near `raw` from {1, 2, 2.5, 5} x 10^k (at least `min`). */
static double nice_step(double raw, double min) {
  if (!(raw > 0)) return min > 0 ? min : 1;
  double mag = pow(10.0, floor(log10(raw)));
  double f = raw / mag, step;
  if (f <= 1.0) step = 1.0;
  else if (f <= 2.0) step = 2.0;
  else if (f <= 2.5) step = 2.5;
  else if (f <= 5.0) step = 5.0;
  else step = 10.0;
  step *= mag;
  return step < min ? min : step;
}

/* Decimals needed to print multiples of `step` exactly (0..3). */
static int step_decimals(double step) {
  for (int d = 0; d < 3; ++d) {
    double scaled = step * pow(10.0, d);
    if (fabs(scaled - floor(scaled + 0.5)) < 1e-9) return d;
  }
  return 3;
}

/* Per record: bytes and the byte address where its rectangle starts; the end of the plan. */
typedef struct layout {
  uint64_t *bytes;
  uint64_t *base;
  uint64_t *lane_start;   /* objects mode: object_count + 1 entries */
  uint64_t end;           /* offsets: total x unit; objects: sum of object bytes */
  uint32_t tasks;         /* largest last task + 1 (at least 1) */
} layout;

static void layout_free(const tg_allocator *a, layout *l) {
  tg__free(a, l->bytes);
  tg__free(a, l->base);
  tg__free(a, l->lane_start);
}

static tg_status layout_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                                const tg_plan *plan, uint64_t unit, const tg_allocator *a,
                                layout *l) {
  memset(l, 0, sizeof *l);
  if (plan->record_count != count || plan->dims != dims ||
      (plan->mode == TG_MODE_OBJECTS && (plan->object_of == NULL || plan->object_sizes == NULL)) ||
      (plan->mode == TG_MODE_OFFSETS && plan->offset_of == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  /* Lanes: objects, or the arenas of an offsets plan of several (drawn one above the other). */
  const int arenas = plan->mode == TG_MODE_OFFSETS && plan->arena_count > 1 && plan->arena_of != NULL &&
                     plan->arena_sizes != NULL;
  size_t k = plan->mode == TG_MODE_OBJECTS ? plan->object_count : arenas ? plan->arena_count : 0;
  l->bytes = tg__calloc(a, count ? count : 1, sizeof *l->bytes);
  l->base = tg__calloc(a, count ? count : 1, sizeof *l->base);
  l->lane_start = tg__calloc(a, k + 1, sizeof *l->lane_start);
  if (l->bytes == NULL || l->base == NULL || l->lane_start == NULL) {
    layout_free(a, l);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  tg_status st = TG_ERROR_OVERFLOW;
  for (size_t i = 0; i < k; ++i) {
    uint64_t v = 0;
    if (arenas) {
      if (!tg__mul_u64(plan->arena_sizes[i], unit, &v)) goto fail;
    } else if (tg_extent_volume(plan->object_sizes[i], &v) != TG_OK || !tg__mul_u64(v, unit, &v)) {
      goto fail;
    }
    if (!tg__add_u64(l->lane_start[i], v, &l->lane_start[i + 1])) goto fail;
  }
  l->tasks = 1;
  for (size_t r = 0; r < count; ++r) {
    uint64_t v;
    if (tg_extent_volume(records[r].size, &v) != TG_OK || !tg__mul_u64(v, unit, &v)) goto fail;
    l->bytes[r] = v;
    if (plan->mode == TG_MODE_OBJECTS) {
      if (plan->object_of[r] >= k) {
        st = TG_ERROR_INVALID_ARGUMENT;
        goto fail;
      }
      l->base[r] = l->lane_start[plan->object_of[r]];
    } else if (!tg__mul_u64(plan->offset_of[r], unit, &l->base[r])) {
      goto fail;
    } else if (arenas) {
      if (plan->arena_of[r] >= k) {
        st = TG_ERROR_INVALID_ARGUMENT;
        goto fail;
      }
      if (!tg__add_u64(l->base[r], l->lane_start[plan->arena_of[r]], &l->base[r])) goto fail;
    }
    uint64_t end;
    if (!tg__add_u64(l->base[r], v, &end)) goto fail;
    if (end > l->end) l->end = end;
    if (records[r].last_task < records[r].first_task) {
      st = TG_ERROR_INVALID_ARGUMENT;
      goto fail;
    }
    if (records[r].last_task >= l->tasks) l->tasks = records[r].last_task + 1;
  }
  if (plan->mode == TG_MODE_OBJECTS) {
    if (l->lane_start[k] > l->end) l->end = l->lane_start[k];
  } else {
    uint64_t t;
    if (!tg__mul_u64(plan->total, unit, &t)) goto fail;
    if (t > l->end) l->end = t;
  }
  return TG_OK;

fail:
  layout_free(a, l);
  return st;
}

/* A byte axis: a unit (B, KiB, ...) and a step in it, so tick labels read "2.5 MiB". */
typedef struct byte_axis {
  double unit;
  const char *unit_name;
  double step;   /* in `unit` */
  double top;    /* bytes at the top of the plot */
  int decimals;
} byte_axis;

static byte_axis byte_axis_for(double max_bytes) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  byte_axis ax;
  int u = 0;
  double unit = 1.0;
  while (u < 5 && max_bytes / unit >= 1024.0) {
    unit *= 1024.0;
    ++u;
  }
  ax.unit = unit;
  ax.unit_name = names[u];
  double range = max_bytes / unit;
  ax.step = nice_step(range / 8.0, u == 0 ? 1.0 : 0.0);
  ax.top = ceil(range / ax.step - 1e-9) * ax.step * unit;
  if (ax.top < max_bytes) ax.top = max_bytes;
  ax.decimals = step_decimals(ax.step);
  return ax;
}

static void svg_horizontal_line(tg__strbuf *b, const char *cls, double y, const char *color,
                                const char *dash, const char *label, int label_above,
                                int anchor_end) {
  tg__strbuf_printf(b,
                    "<line class=\"%s\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" "
                    "stroke-width=\"1.6\" stroke-dasharray=\"%s\"/>\n",
                    cls, MARGIN_LEFT, y, MARGIN_LEFT + PLOT_W, y, color, dash);
  double ty = label_above ? y - 6 : y + 16;
  double tx = anchor_end ? MARGIN_LEFT + PLOT_W - 8 : MARGIN_LEFT + 8;
  tg__strbuf_printf(b,
                    "<text class=\"%s-label\" x=\"%.1f\" y=\"%.2f\" text-anchor=\"%s\" fill=\"%s\" "
                    "font-size=\"14\" font-weight=\"bold\" stroke=\"#ffffff\" stroke-width=\"4\" "
                    "paint-order=\"stroke\">",
                    cls, tx, ty, anchor_end ? "end" : "start", color);
  xml_escaped(b, label, SIZE_MAX);
  tg__strbuf_puts(b, "</text>\n");
}

/* The document's start: the canvas, a white background and the title (NULL: none). */
static void svg_open(tg__strbuf *b, const char *title) {
  tg__strbuf_printf(b,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                    "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
                    CANVAS_W, CANVAS_H, CANVAS_W, CANVAS_H);
  tg__strbuf_printf(b, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                    CANVAS_W, CANVAS_H);
  if (title != NULL) {
    tg__strbuf_printf(b, "<text class=\"title\" x=\"%d\" y=\"30\" font-size=\"20\" font-weight=\"bold\" fill=\"#111827\">",
                      MARGIN_LEFT);
    xml_escaped(b, title, SIZE_MAX);
    tg__strbuf_puts(b, "</text>\n");
  }
}

/* What a view adds to a chart: where its tensors live, and where the fallback buffers start. */
typedef struct view_extras {
  tg_storage storage;
  const tg_storage *storage_of;
  size_t primary_count;
  uint64_t primary_bytes;
} view_extras;

static tg_status render_svg(const tg_usage_record *records, const char *const *names,
                            size_t count, uint32_t dims, const tg_plan *plan,
                            uint64_t lower_bound, uint64_t unit_bytes, const char *title,
                            const view_extras *vx, const tg_allocator *alloc, char **out_svg,
                            size_t *out_length) {
  if (out_svg == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out_svg = NULL;
  if (plan == NULL || (records == NULL && count > 0) || dims < 1 || dims > 3)
    return TG_ERROR_INVALID_ARGUMENT;
  const size_t fallbacks = vx ? count - vx->primary_count : 0;
  alloc = tg__alloc_or_default(alloc);
  uint64_t unit = unit_bytes ? unit_bytes : 1;
  layout l;
  tg_status st = layout_compute(records, count, dims, plan, unit, alloc, &l);
  if (st != TG_OK) return st;
  uint64_t bound_bytes;
  if (!tg__mul_u64(lower_bound, unit, &bound_bytes)) {
    layout_free(alloc, &l);
    return TG_ERROR_OVERFLOW;
  }
  const int objects = plan->mode == TG_MODE_OBJECTS;

  /* Headroom above the highest line for its label. */
  double top_bytes = (double)(l.end > bound_bytes ? l.end : bound_bytes);
  if (top_bytes < 1) top_bytes = 1;
  byte_axis ya = byte_axis_for(top_bytes * 1.05);
  const double sy = PLOT_H / ya.top;
  const double sx = (double)PLOT_W / (double)l.tasks;
  const double plot_bottom = MARGIN_TOP + PLOT_H;
#define Y_OF(bytes) (plot_bottom - (double)(bytes) * sy)

  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  char h1[32], h2[32], h3[32];
  /* Title and a one-line summary. */
  svg_open(&b, title);
  tg__strbuf_printf(&b, "<text class=\"summary\" x=\"%d\" y=\"54\" font-size=\"14\" fill=\"#4b5563\">", MARGIN_LEFT);
  if (objects)
    tg__strbuf_printf(&b, "%zu tensors, %u tasks, %zu objects stacked in id order (each lane as tall as its object; pale = unused); total %s",
                      count, l.tasks, plan->object_count, tg_report_format_bytes(l.end, h1, sizeof h1));
  else if (plan->arena_count > 1)
    tg__strbuf_printf(&b, "%zu tensors, %u tasks, offsets in %zu arenas stacked in id order (allocation cap %s); total %s",
                      count, l.tasks, plan->arena_count,
                      tg_report_format_bytes(plan->max_allocation * unit, h2, sizeof h2),
                      tg_report_format_bytes(l.end, h1, sizeof h1));
  else if (fallbacks)
    tg__strbuf_printf(&b, "%zu tensors, %u tasks, offsets in arenas (%s, then the fallback tensors' arenas); highest address used %s",
                      count, l.tasks, tg_storage_name(vx->storage), tg_report_format_bytes(l.end, h1, sizeof h1));
  else
    tg__strbuf_printf(&b, "%zu tensors, %u tasks, offsets in one arena; highest address used %s",
                      count, l.tasks, tg_report_format_bytes(l.end, h1, sizeof h1));
  if (bound_bytes > 0 && l.end > 0)
    tg__strbuf_printf(&b, "; lower bound %s (%.3f x)", tg_report_format_bytes(bound_bytes, h2, sizeof h2),
                      (double)l.end / (double)bound_bytes);
  tg__strbuf_puts(&b, "</text>\n");

  /* Plot area, lanes, grid. */
  tg__strbuf_printf(&b, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f9fafb\" stroke=\"#9ca3af\"/>\n",
                    MARGIN_LEFT, MARGIN_TOP, PLOT_W, PLOT_H);
  const size_t lanes = objects ? plan->object_count : plan->arena_count > 1 ? plan->arena_count : 0;
  if (lanes > 0) {
    tg__strbuf_puts(&b, "<g class=\"lanes\" stroke=\"#cbd5e1\" stroke-width=\"0.5\">\n");
    for (size_t k = 0; k < lanes; ++k) {
      double y0 = Y_OF(l.lane_start[k + 1]), y1 = Y_OF(l.lane_start[k]);
      tg__strbuf_printf(&b, "<rect class=\"lane\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"%s\"/>\n",
                        MARGIN_LEFT, y0, PLOT_W, y1 - y0, (k & 1) ? "#eef2f7" : "#e2e8f0");
    }
    tg__strbuf_puts(&b, "</g>\n");
  }
  tg__strbuf_puts(&b, "<g class=\"grid\" stroke=\"#d1d5db\" stroke-width=\"0.6\" font-size=\"13\" fill=\"#374151\">\n");
  for (int i = 0;; ++i) {
    double v = ya.step * i;
    double bytes = v * ya.unit;
    if (bytes > ya.top * (1 + 1e-9)) break;
    double y = Y_OF(bytes);
    tg__strbuf_printf(&b, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\"/>", MARGIN_LEFT, y,
                      MARGIN_LEFT + PLOT_W, y);
    tg__strbuf_printf(&b, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" stroke=\"none\">%.*f %s</text>\n",
                      MARGIN_LEFT - 8, y + 4.5, ya.decimals, v, ya.unit_name);
  }
  double xstep = nice_step((double)l.tasks / 12.0, 1.0);
  xstep = ceil(xstep);
  for (double t = 0; t <= (double)l.tasks + 1e-9; t += xstep) {
    double x = MARGIN_LEFT + t * sx;
    tg__strbuf_printf(&b, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.2f\" stroke-dasharray=\"2 4\"/>", x,
                      MARGIN_TOP, x, plot_bottom);
    tg__strbuf_printf(&b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" stroke=\"none\">%.0f</text>\n", x,
                      plot_bottom + 18, t);
  }
  tg__strbuf_puts(&b, "</g>\n");

  /* Tensors. Thin strokes keep neighbours apart without hiding small rectangles. */
  tg__strbuf_puts(&b, "<g class=\"tensors\" stroke=\"#1f2937\" stroke-width=\"0.4\" stroke-opacity=\"0.6\">\n");
  for (size_t r = 0; r < count; ++r) {
    double x = MARGIN_LEFT + records[r].first_task * sx;
    double w = ((double)records[r].last_task + 1 - records[r].first_task) * sx;
    double y1 = Y_OF(l.base[r]), y0 = Y_OF(l.base[r] + l.bytes[r]);
    double h = y1 - y0;
    if (h < 0.8) { /* keep tiny and empty tensors visible */
      y0 = y1 - 0.8;
      h = 0.8;
    }
    tg__strbuf_printf(&b, "<rect class=\"t\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"0.9\"><title>",
                      x, y0, w, h, k_palette[r % (sizeof k_palette / sizeof k_palette[0])]);
    if (names && names[r]) xml_escaped(&b, names[r], SIZE_MAX);
    else tg__strbuf_printf(&b, "#%zu", r);
    tg__strbuf_printf(&b, "\n%s (%llu bytes)\ntasks %u..%u", tg_report_format_bytes(l.bytes[r], h1, sizeof h1),
                      (unsigned long long)l.bytes[r], records[r].first_task, records[r].last_task);
    if (objects) tg__strbuf_printf(&b, "\nobject %u", plan->object_of[r]);
    else tg__strbuf_printf(&b, "\noffset %s", tg_report_format_bytes(l.base[r], h2, sizeof h2));
    if (vx && vx->storage_of)
      tg__strbuf_printf(&b, "\n%s%s", tg_storage_name(vx->storage_of[r]),
                        r >= vx->primary_count ? " (fallback)" : "");
    tg__strbuf_puts(&b, "</title></rect>\n");
  }
  tg__strbuf_puts(&b, "</g>\n");

  /* Names only where they fit: at 1,000 tensors most rectangles are a few pixels tall. */
  tg__strbuf_puts(&b, "<g class=\"names\" font-size=\"11\" fill=\"#111827\" pointer-events=\"none\">\n");
  for (size_t r = 0; r < count && names; ++r) {
    if (names[r] == NULL) continue;
    double x = MARGIN_LEFT + records[r].first_task * sx;
    double w = ((double)records[r].last_task + 1 - records[r].first_task) * sx;
    double y1 = Y_OF(l.base[r]), y0 = Y_OF(l.base[r] + l.bytes[r]);
    if (w < 24 || y1 - y0 < 14) continue;
    size_t fit = (size_t)((w - 6) / 6.6);
    size_t len = strlen(names[r]);
    /* A stub like "lay..." says nothing: print whole names, or enough of one to recognise. */
    if (len > fit && fit < 16) continue;
    tg__strbuf_printf(&b, "<text x=\"%.2f\" y=\"%.2f\">", x + 3, (y0 + y1) / 2 + 4);
    if (len <= fit) {
      xml_escaped(&b, names[r], SIZE_MAX);
    } else {
      xml_escaped(&b, names[r], fit > 1 ? fit - 1 : 1);
      tg__strbuf_puts(&b, "\xE2\x80\xA6");
    }
    tg__strbuf_puts(&b, "</text>\n");
  }
  tg__strbuf_puts(&b, "</g>\n");

  /* The plan's end and the bound. The end's label sits above its line at the right, the
   * bound's below its line at the left, so they stay readable when the lines coincide. */
  char label[160];
  snprintf(label, sizeof label, objects ? "total: %s (sum of object sizes)" : "peak: %s (highest address used)",
           tg_report_format_bytes(l.end, h1, sizeof h1));
  svg_horizontal_line(&b, "peak", Y_OF(l.end), "#b91c1c", "9 5", label, 1, 1);
  if (lower_bound > 0) {
    snprintf(label, sizeof label, "lower bound: %s", tg_report_format_bytes(bound_bytes, h3, sizeof h3));
    svg_horizontal_line(&b, "bound", Y_OF(bound_bytes), "#047857", "3 3", label, 0, 0);
  }

  /* Fallback buffers sit above the storage's own memory: mark where they start. */
  if (fallbacks) {
    uint64_t split;
    if (tg__mul_u64(vx->primary_bytes, unit, &split) && split <= l.end) {
      double y = Y_OF(split);
      tg__strbuf_printf(&b,
                        "<line class=\"fallback-split\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                        "stroke=\"#1d4ed8\" stroke-width=\"1.2\"/>\n",
                        MARGIN_LEFT, y, MARGIN_LEFT + PLOT_W, y);
      tg__strbuf_printf(&b,
                        "<text class=\"fallback-split-label\" x=\"%.1f\" y=\"%.2f\" text-anchor=\"middle\" "
                        "fill=\"#1d4ed8\" font-size=\"13\" font-weight=\"bold\" stroke=\"#ffffff\" "
                        "stroke-width=\"4\" paint-order=\"stroke\">above: %zu fallback tensor%s; "
                        "below: %s (%s)</text>\n",
                        MARGIN_LEFT + PLOT_W / 2.0, y - 6, fallbacks, fallbacks == 1 ? "" : "s",
                        tg_storage_name(vx->storage), tg_report_format_bytes(split, h2, sizeof h2));
    }
  }

  /* Axis titles. */
  tg__strbuf_printf(&b, "<text class=\"x-axis\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"15\" fill=\"#111827\">task (op index in execution order; a tensor spans its first to its last task)</text>\n",
                    MARGIN_LEFT + PLOT_W / 2.0, CANVAS_H - 34);
  tg__strbuf_printf(&b, "<text class=\"y-axis\" x=\"0\" y=\"0\" transform=\"translate(22 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"15\" fill=\"#111827\">%s</text>\n",
                    MARGIN_TOP + PLOT_H / 2.0,
                    objects ? "objects stacked back to back (bytes)" : "address in the arena (bytes)");
  tg__strbuf_printf(&b, "<text class=\"hint\" x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"12\" fill=\"#6b7280\">hover a rectangle for its tensor, size and interval</text>\n",
                    CANVAS_W - MARGIN_RIGHT, CANVAS_H - 12);
  tg__strbuf_puts(&b, "</svg>\n");
#undef Y_OF
  layout_free(alloc, &l);
  if (b.failed) {
    tg__strbuf_free(&b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out_svg = b.data;
  if (out_length) *out_length = b.length;
  return TG_OK;
}

tg_status tg_report_render_svg(const tg_usage_record *records, const char *const *names,
                               size_t count, uint32_t dims, const tg_plan *plan,
                               uint64_t lower_bound, uint64_t unit_bytes, const char *title,
                               const tg_allocator *alloc, char **out_svg, size_t *out_length) {
  return render_svg(records, names, count, dims, plan, lower_bound, unit_bytes, title, NULL, alloc,
                    out_svg, out_length);
}

tg_status tg_report_render_view_svg(const tg_report_view *view, const char *title,
                                    const tg_allocator *alloc, char **out_svg,
                                    size_t *out_length) {
  if (out_svg == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out_svg = NULL;
  if (view == NULL || view->primary_count > view->count) return TG_ERROR_INVALID_ARGUMENT;
  view_extras vx = {view->storage, view->storage_of, view->primary_count, view->primary_bytes};
  return render_svg(view->records, view->names, view->count, 1, view->plan, view->lower_bound, 1,
                    title, &vx, alloc, out_svg, out_length);
}

/* Memory against size: one polyline per figure of tg_range_report_size. */
typedef struct range_series {
  const char *cls, *name, *color, *dash;
  size_t field; /* offsetof into tg_range_report_size */
} range_series;

static uint64_t range_value(const tg_range_report_size *s, size_t field) {
  uint64_t v;
  memcpy(&v, (const char *)s + field, sizeof v);
  return v;
}

static void range_size_name(const tg_range_report_size *s, uint32_t dim_count, char *buf, size_t size) {
  if (dim_count == 1) snprintf(buf, size, "%lld", (long long)s->dims[0]);
  else snprintf(buf, size, "%lldx%lld", (long long)s->dims[0], (long long)s->dims[1]);
}

tg_status tg_report_render_range_svg(const tg_range_report_size *sizes, size_t count, uint32_t dim_count,
                                     const char *title, const tg_allocator *alloc, char **out_svg,
                                     size_t *out_length) {
  if (out_svg == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out_svg = NULL;
  if (sizes == NULL || count == 0 || dim_count < 1 || dim_count > 2) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  static const range_series k_series[] = {
      {"upper-bound", "upper-bound plan (the largest size's, at every size)", "#6b7280", "8 4",
       offsetof(tg_range_report_size, upper_bound_bytes)},
      {"pool", "run-time pool's peak", "#f28e2b", "none", offsetof(tg_range_report_size, pool_bytes)},
      {"bound", "lower bound", "#047857", "2 3", offsetof(tg_range_report_size, lower_bound)},
      {"own", "own best (planned alone)", "#1d4ed8", "4 3", offsetof(tg_range_report_size, own_bytes)},
      {"plan", "range plan (one structure per piece)", "#b91c1c", "none", offsetof(tg_range_report_size, bytes)},
  };
  const size_t nseries = sizeof k_series / sizeof k_series[0];
  uint64_t top = 1;
  size_t worst = 0;
  double worst_ratio = 0.0;
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < nseries; ++k)
      if (range_value(&sizes[i], k_series[k].field) > top) top = range_value(&sizes[i], k_series[k].field);
    double r = sizes[i].own_bytes ? (double)sizes[i].bytes / (double)sizes[i].own_bytes : 1.0;
    if (r > worst_ratio) {
      worst_ratio = r;
      worst = i;
    }
  }
  byte_axis ya = byte_axis_for((double)top * 1.08);
  const double sy = PLOT_H / ya.top, step = (double)PLOT_W / (double)count;
  const double plot_bottom = MARGIN_TOP + PLOT_H;
#define RX(i) (MARGIN_LEFT + ((double)(i) + 0.5) * step)
#define RY(bytes) (plot_bottom - (double)(bytes) * sy)
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  char h1[32], h2[32], h3[32], name[64];
  svg_open(&b, title);
  range_size_name(&sizes[worst], dim_count, name, sizeof name);
  tg__strbuf_printf(&b, "<text class=\"summary\" x=\"%d\" y=\"54\" font-size=\"14\" fill=\"#4b5563\">%zu sizes; "
                        "worst ratio to the own best %.4f at %s (%s against %s); upper-bound plan %s</text>\n",
                    MARGIN_LEFT, count, worst_ratio, name, tg_report_format_bytes(sizes[worst].bytes, h1, sizeof h1),
                    tg_report_format_bytes(sizes[worst].own_bytes, h2, sizeof h2),
                    tg_report_format_bytes(sizes[0].upper_bound_bytes, h3, sizeof h3));
  tg__strbuf_printf(&b, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f9fafb\" stroke=\"#9ca3af\"/>\n",
                    MARGIN_LEFT, MARGIN_TOP, PLOT_W, PLOT_H);
  tg__strbuf_puts(&b, "<g class=\"grid\" stroke=\"#d1d5db\" stroke-width=\"0.6\" font-size=\"13\" fill=\"#374151\">\n");
  for (int i = 0;; ++i) {
    double v = ya.step * i, bytes = v * ya.unit;
    if (bytes > ya.top * (1 + 1e-9)) break;
    tg__strbuf_printf(&b, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\"/>", MARGIN_LEFT, RY(bytes),
                      MARGIN_LEFT + PLOT_W, RY(bytes));
    tg__strbuf_printf(&b, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" stroke=\"none\">%.*f %s</text>\n",
                      MARGIN_LEFT - 8, RY(bytes) + 4.5, ya.decimals, v, ya.unit_name);
  }
  size_t every = count / 12 + 1;
  for (size_t i = 0; i < count; i += every) {
    range_size_name(&sizes[i], dim_count, name, sizeof name);
    tg__strbuf_printf(&b, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.2f\" stroke-dasharray=\"2 4\"/>", RX(i),
                      MARGIN_TOP, RX(i), plot_bottom);
    tg__strbuf_printf(&b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" stroke=\"none\">%s</text>\n", RX(i),
                      plot_bottom + 18, name);
  }
  tg__strbuf_puts(&b, "</g>\n");
  for (size_t k = 0; k < nseries; ++k) {
    tg__strbuf_printf(&b, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"",
                      k_series[k].cls, k_series[k].color, k_series[k].dash);
    for (size_t i = 0; i < count; ++i)
      tg__strbuf_printf(&b, "%s%.2f,%.2f", i ? " " : "", RX(i), RY(range_value(&sizes[i], k_series[k].field)));
    tg__strbuf_puts(&b, "\"/>\n");
    /* The legend, top right. */
    double ly = MARGIN_TOP + 22.0 + 22.0 * (double)k;
    tg__strbuf_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/>"
                          "<text class=\"legend\" x=\"%d\" y=\"%.1f\" font-size=\"13\" fill=\"#111827\">%s</text>\n",
                      MARGIN_LEFT + PLOT_W - 420, ly, MARGIN_LEFT + PLOT_W - 380, ly, k_series[k].color, k_series[k].dash,
                      MARGIN_LEFT + PLOT_W - 372, ly + 4.5, k_series[k].name);
  }
  /* One hover column per size, and the worst ratio marked. */
  tg__strbuf_puts(&b, "<g class=\"sizes\" fill=\"#000000\" fill-opacity=\"0\">\n");
  for (size_t i = 0; i < count; ++i) {
    const tg_range_report_size *s = &sizes[i];
    range_size_name(s, dim_count, name, sizeof name);
    tg__strbuf_printf(&b, "<rect class=\"size\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"><title>%s\nplan %llu bytes "
                          "(%.4f x own best)\nown best %llu\nupper-bound plan %llu\npool %llu\nlower bound %llu\npiece %u</title></rect>\n",
                      RX(i) - step / 2, MARGIN_TOP, step, PLOT_H, name, (unsigned long long)s->bytes,
                      s->own_bytes ? (double)s->bytes / (double)s->own_bytes : 1.0, (unsigned long long)s->own_bytes,
                      (unsigned long long)s->upper_bound_bytes, (unsigned long long)s->pool_bytes,
                      (unsigned long long)s->lower_bound, s->piece);
  }
  tg__strbuf_puts(&b, "</g>\n");
  range_size_name(&sizes[worst], dim_count, name, sizeof name);
  tg__strbuf_printf(&b, "<circle class=\"worst\" cx=\"%.2f\" cy=\"%.2f\" r=\"6\" fill=\"none\" stroke=\"#111827\" stroke-width=\"2\"/>"
                        "<text class=\"worst-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"13\" font-weight=\"bold\" fill=\"#111827\" "
                        "stroke=\"#ffffff\" stroke-width=\"4\" paint-order=\"stroke\" text-anchor=\"%s\">worst ratio %.4f at %s</text>\n",
                    RX(worst), RY(sizes[worst].bytes), RX(worst), RY(sizes[worst].bytes) - 12,
                    worst * 2 < count ? "start" : "end", worst_ratio, name);
  tg__strbuf_printf(&b, "<text class=\"x-axis\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"15\" fill=\"#111827\">size (%s)</text>\n",
                    MARGIN_LEFT + PLOT_W / 2.0, CANVAS_H - 34,
                    dim_count == 1 ? "the dynamic dimension" : "the two dynamic dimensions, in order");
  tg__strbuf_printf(&b, "<text class=\"y-axis\" x=\"0\" y=\"0\" transform=\"translate(22 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"15\" fill=\"#111827\">memory (bytes)</text>\n",
                    MARGIN_TOP + PLOT_H / 2.0);
  tg__strbuf_puts(&b, "</svg>\n");
#undef RX
#undef RY
  if (b.failed) {
    tg__strbuf_free(&b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out_svg = b.data;
  if (out_length) *out_length = b.length;
  return TG_OK;
}

tg_status tg_report_build_csv(const tg_usage_record *records, const char *const *names,
                              const tg_storage *storage_of, size_t count, uint32_t dims,
                              const tg_plan *plan, uint64_t unit_bytes, const tg_allocator *alloc,
                              char **out_csv, size_t *out_length) {
  if (out_csv == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out_csv = NULL;
  if (plan == NULL || (records == NULL && count > 0) || dims < 1 || dims > 3)
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  layout l;
  tg_status st = layout_compute(records, count, dims, plan, unit_bytes ? unit_bytes : 1, alloc, &l);
  if (st != TG_OK) return st;
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  tg__strbuf_puts(&b, "tensor_name,size,offset,start_time,end_time,object,storage\n");
  for (size_t r = 0; r < count; ++r) {
    /* Always quoted: names may hold commas, quotes or newlines. */
    tg__strbuf_puts(&b, "\"");
    if (names && names[r]) {
      for (const char *c = names[r]; *c; ++c) tg__strbuf_append(&b, *c == '"' ? "\"\"" : c, *c == '"' ? 2 : 1);
    } else {
      tg__strbuf_printf(&b, "#%zu", r);
    }
    const char *where = storage_of ? tg_storage_name(storage_of[r]) : NULL;
    tg__strbuf_printf(&b, "\",%llu,%llu,%u,%u,%u,%s\n", (unsigned long long)l.bytes[r],
                      (unsigned long long)l.base[r], records[r].first_task, records[r].last_task,
                      plan->mode == TG_MODE_OBJECTS ? plan->object_of[r] : tg_plan_arena_of(plan, r),
                      where ? where : "");
  }
  layout_free(alloc, &l);
  if (b.failed) {
    tg__strbuf_free(&b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out_csv = b.data;
  if (out_length) *out_length = b.length;
  return TG_OK;
}
