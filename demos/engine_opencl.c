/* A small OpenCL inference engine that lets Tangram place its intermediate tensors.
 *
 * The engine owns everything OpenCL: it creates its context, device and queues, compiles its
 * float kernels and runs a 50-op network of 5 blocks, each with two branches joined by a
 * concatenation and a residual add:
 *
 *        x ─┬─ dwconv3x3 ─ scale ─ relu ─────────────┐
 *           ├─ scale ─ dwconv3x3 ─┬─ mul ───────────── concat ─ fold ─ add(x) ─> next block
 *           │                     └─ mean (output) ─┘
 *           └──────────────────────────────────────────────────────────┘
 *
 * It runs the network twice per storage (buffers, and 2D images where the device has them):
 * once with one allocation per tensor, once on Tangram's plan realised in the engine's own
 * context (tg_device_wrap_opencl) in objects and offsets mode, with a serial plan on an
 * in-order queue and a parallel-safe plan on an out-of-order queue (where the device has
 * one). Every output must be bit-identical to the one-allocation-per-tensor run. With buffers
 * it runs every plan again with in-place pairs: its elementwise kernels (scale, relu, add, mul)
 * read each element before writing the same element, without restrict, so their output may
 * alias an input that dies there (OpenCL 1.2 images are read-only or write-only per kernel, so
 * images get no pairs).
 *
 *   engine_opencl             exit 0: all equal; 1: a mismatch or an error; 77: no OpenCL
 *
 * Errors end the program (a real engine would unwind); the rest is what an engine does. */
#define CL_TARGET_OPENCL_VERSION 120
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/opencl.h" /* includes CL/cl.h */
#include "tangram/planner.h"
#include "tangram/schedule.h"

static void die_tg(const char *what, tg_status st, const tg_error_info *err) {
  fprintf(stderr, "engine_opencl: %s: %s%s%s\n", what, tg_status_name(st),
          err && err->message[0] ? ": " : "", err ? err->message : "");
  exit(1);
}
#define TG(call, err)                            \
  do {                                           \
    tg_status st_ = (call);                      \
    if (st_ != TG_OK) die_tg(#call, st_, (err)); \
  } while (0)
#define CL(call)                                                         \
  do {                                                                   \
    cl_int e_ = (call);                                                  \
    if (e_ != CL_SUCCESS) {                                              \
      fprintf(stderr, "engine_opencl: %s failed: %d\n", #call, (int)e_); \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

/* ---- The kernels: one float4 per work item, tensor layout (x, s*H + y) for channel slice s
 * (4 channels), the TFLite GPU layout that tg_storage_extent sizes. The same source builds
 * for buffers (IMG=0) and 2D images (IMG=1). FP_CONTRACT OFF: no fused multiply-add, so every
 * run computes exactly the same bits. */
static const char k_source[] =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "#if IMG\n"
    "#define IN __read_only image2d_t\n"
    "#define OUT __write_only image2d_t\n"
    "#define LD(t, x, y, s, W, H) read_imagef(t, (int2)((x), (s) * (H) + (y)))\n"
    "#define ST(t, x, y, s, W, H, v) write_imagef(t, (int2)((x), (s) * (H) + (y)), v)\n"
    "#else\n"
    "#define IN __global const float4 *\n"
    "#define OUT __global float4 *\n"
    "#define LD(t, x, y, s, W, H) t[((s) * (H) + (y)) * (W) + (x)]\n"
    "#define ST(t, x, y, s, W, H, v) t[((s) * (H) + (y)) * (W) + (x)] = (v)\n"
    "#endif\n"
    "#define XYS int x = get_global_id(0), y = get_global_id(1), s = get_global_id(2);\n"
    "__kernel void scale(OUT o, IN a, int W, int H, float k, float b) {\n"
    "  XYS ST(o, x, y, s, W, H, LD(a, x, y, s, W, H) * k + b); }\n"
    "__kernel void relu(OUT o, IN a, int W, int H) {\n"
    "  XYS ST(o, x, y, s, W, H, fmax(LD(a, x, y, s, W, H), (float4)(0.0f))); }\n"
    "__kernel void add(OUT o, IN a, IN b, int W, int H) {\n"
    "  XYS ST(o, x, y, s, W, H, LD(a, x, y, s, W, H) + LD(b, x, y, s, W, H)); }\n"
    "__kernel void mul(OUT o, IN a, IN m, int W, int H) {  /* m: one value per channel */\n"
    "  XYS ST(o, x, y, s, W, H, LD(a, x, y, s, W, H) * LD(m, 0, 0, s, 1, 1)); }\n"
    "__kernel void dwconv3x3(OUT o, IN a, int W, int H, __global const float4 *w) {\n"
    "  XYS float4 acc = w[s * 10 + 9];  /* 9 taps then the bias, per slice */\n"
    "  for (int dy = -1; dy <= 1; ++dy)\n"
    "    for (int dx = -1; dx <= 1; ++dx) {\n"
    "      int xx = x + dx, yy = y + dy;  /* zero padding: never read outside the tensor */\n"
    "      if (xx >= 0 && xx < W && yy >= 0 && yy < H)\n"
    "        acc += LD(a, xx, yy, s, W, H) * w[s * 10 + (dy + 1) * 3 + dx + 1];\n"
    "    }\n"
    "  ST(o, x, y, s, W, H, acc); }\n"
    "__kernel void mean(OUT o, IN a, int W, int H) {  /* over H and W: a 1x1 tensor */\n"
    "  int s = get_global_id(2); float4 sum = (float4)(0.0f);\n"
    "  for (int y = 0; y < H; ++y) for (int x = 0; x < W; ++x) sum += LD(a, x, y, s, W, H);\n"
    "  ST(o, 0, 0, s, 1, 1, sum / (float)(W * H)); }\n"
    "__kernel void concat(OUT o, IN a, IN b, int W, int H, int sa) {  /* channels */\n"
    "  XYS ST(o, x, y, s, W, H, s < sa ? LD(a, x, y, s, W, H) : LD(b, x, y, s - sa, W, H)); }\n"
    "__kernel void fold(OUT o, IN a, int W, int H, int so) {  /* sum of the two halves */\n"
    "  XYS ST(o, x, y, s, W, H, LD(a, x, y, s, W, H) + LD(a, x, y, s + so, W, H)); }\n";

/* ---- The network, as the engine knows it. */
enum { H = 20, W = 20, C = 8, BLOCKS = 5, MAX_T = 64, MAX_OPS = 64 };
typedef enum { SCALE, RELU, ADD, MUL, DWCONV, MEAN, CONCAT, FOLD, KINDS } kind;
static const char *const k_kernel[KINDS] = {"scale",     "relu", "add",    "mul",
                                            "dwconv3x3", "mean", "concat", "fold"};
typedef struct op {
  kind kind;
  int in[2], n_in, out;
  float k, b;     /* scale */
  cl_mem weights; /* dwconv: 9 taps + bias per slice (the engine's constants) */
} op;
typedef struct net {
  int tensors, ops, outputs[BLOCKS + 1], n_out;
  int channels[MAX_T], spatial[MAX_T]; /* spatial: H = W, or 1 for a mean */
  op op[MAX_OPS];
} net;

static int tensor(net *n, int channels, int spatial) {
  n->channels[n->tensors] = channels;
  n->spatial[n->tensors] = spatial;
  return n->tensors++;
}
static int add_op(net *n, kind k, int a, int b, int out) {
  n->op[n->ops] = (op){k, {a, b}, b < 0 ? 1 : 2, out, 1.0f, 0.0f, NULL};
  n->ops++;
  return out;
}

static void build_net(net *n, cl_context ctx) {
  memset(n, 0, sizeof *n);
  int x = tensor(n, C, H); /* the input */
  for (int blk = 0; blk < BLOCKS; ++blk) {
    int a = add_op(n, DWCONV, x, -1, tensor(n, C, H));
    a = add_op(n, SCALE, a, -1, tensor(n, C, H));
    a = add_op(n, RELU, a, -1, tensor(n, C, H));
    int b = add_op(n, SCALE, x, -1, tensor(n, C, H));
    b = add_op(n, DWCONV, b, -1, tensor(n, C, H));
    int m = add_op(n, MEAN, b, -1, tensor(n, C, 1));
    n->outputs[n->n_out++] = m;
    b = add_op(n, MUL, b, m, tensor(n, C, H));
    int c = add_op(n, CONCAT, a, b, tensor(n, 2 * C, H));
    int d = add_op(n, FOLD, c, -1, tensor(n, C, H));
    x = add_op(n, ADD, d, x, tensor(n, C, H));
  }
  n->outputs[n->n_out++] = x;
  /* Constants: small exact values, different per op. */
  for (int o = 0; o < n->ops; ++o) {
    op *p = &n->op[o];
    p->k = 0.5f + 0.125f * (float)(o % 5);
    p->b = -0.25f + 0.0625f * (float)(o % 7);
    if (p->kind != DWCONV) continue;
    float w[C / 4 * 10 * 4];
    for (int i = 0; i < C / 4 * 10 * 4; ++i) w[i] = (float)((i * 7 + o) % 9 - 4) / 8.0f;
    cl_int e;
    p->weights = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof w, w, &e);
    CL(e);
  }
}

/* The same network as a tg_graph: shapes [1, H, W, C], ops in execution order. */
static tg_graph *to_graph(const net *n) {
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  TG(tg_graph_create((size_t)n->tensors, (size_t)n->ops, NULL, &g), NULL);
  for (int t = 0; t < n->tensors; ++t) {
    char name[16];
    snprintf(name, sizeof name, "t%d", t);
    int64_t shape[4] = {1, n->spatial[t], n->spatial[t], n->channels[t]};
    TG(tg_graph_set_tensor(g, (size_t)t, name, 4, shape, TG_DTYPE_FLOAT32, 0), &err);
  }
  for (int o = 0; o < n->ops; ++o) {
    const op *p = &n->op[o];
    TG(tg_graph_set_op(g, (size_t)o, k_kernel[p->kind], (uint32_t)p->n_in, p->in, 1, &p->out),
       &err);
  }
  uint32_t in = 0, out[BLOCKS + 1];
  for (int i = 0; i < n->n_out; ++i) out[i] = (uint32_t)n->outputs[i];
  TG(tg_graph_set_io(g, 1, &in, (size_t)n->n_out, out), &err);
  return g;
}

/* ---- The engine's side of memory. */
typedef struct engine {
  cl_context ctx;
  cl_device_id dev;
  cl_command_queue in_order, ooo; /* ooo: NULL without out-of-order support */
  cl_kernel k[2][KINDS];          /* [image][kind] */
  int images;
} engine;

static size_t slices(int channels) { return (size_t)(channels + 3) / 4; }

/* One allocation for tensor t, as an engine without Tangram makes it. */
static cl_mem alloc_tensor(const engine *e, const net *n, int t, int image) {
  size_t s = slices(n->channels[t]), hw = (size_t)n->spatial[t];
  cl_int err;
  cl_mem m;
  if (image) {
    cl_image_format f = {CL_RGBA, CL_FLOAT};
    cl_image_desc d;
    memset(&d, 0, sizeof d);
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = hw;
    d.image_height = hw * s;
    m = clCreateImage(e->ctx, CL_MEM_READ_WRITE, &f, &d, NULL, &err);
  } else {
    m = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, hw * hw * s * 16, NULL, &err);
  }
  CL(err);
  return m;
}

static void write_tensor(cl_command_queue q, cl_mem m, const net *n, int t, int image,
                         const float *v) {
  size_t hw = (size_t)n->spatial[t], s = slices(n->channels[t]);
  size_t origin[3] = {0, 0, 0}, region[3] = {hw, hw * s, 1};
  if (image)
    CL(clEnqueueWriteImage(q, m, CL_TRUE, origin, region, 0, 0, v, 0, NULL, NULL));
  else
    CL(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, hw * hw * s * 16, v, 0, NULL, NULL));
}

static void read_tensor(cl_command_queue q, cl_mem m, const net *n, int t, int image, float *v) {
  size_t hw = (size_t)n->spatial[t], s = slices(n->channels[t]);
  size_t origin[3] = {0, 0, 0}, region[3] = {hw, hw * s, 1};
  if (image)
    CL(clEnqueueReadImage(q, m, CL_TRUE, origin, region, 0, 0, v, 0, NULL, NULL));
  else
    CL(clEnqueueReadBuffer(q, m, CL_TRUE, 0, hw * hw * s * 16, v, 0, NULL, NULL));
}

/* Run every op with tensor t in mem[t]. Out of order, each op waits for the ops that produce
 * its inputs (the graph's edges) and nothing else: safe because a parallel-safe plan never
 * gives a tensor memory that a concurrent op still uses. */
static void run_net(const engine *e, const net *n, cl_mem *mem, int image, cl_command_queue q,
                    int out_of_order) {
  cl_event done[MAX_OPS] = {0};
  int producer[MAX_T];
  for (int t = 0; t < n->tensors; ++t) producer[t] = -1;
  for (int o = 0; o < n->ops; ++o) {
    const op *p = &n->op[o];
    cl_kernel k = e->k[image][p->kind];
    int out = p->out, hw = n->spatial[out], a = 0;
    int in_hw = n->spatial[p->in[0]];
    CL(clSetKernelArg(k, a++, sizeof(cl_mem), &mem[out]));
    for (int i = 0; i < p->n_in; ++i) CL(clSetKernelArg(k, a++, sizeof(cl_mem), &mem[p->in[i]]));
    CL(clSetKernelArg(k, a++, sizeof(int), &in_hw));
    CL(clSetKernelArg(k, a++, sizeof(int), &in_hw));
    if (p->kind == SCALE) {
      CL(clSetKernelArg(k, a++, sizeof(float), &p->k));
      CL(clSetKernelArg(k, a++, sizeof(float), &p->b));
    } else if (p->kind == DWCONV) {
      CL(clSetKernelArg(k, a++, sizeof(cl_mem), &p->weights));
    } else if (p->kind == CONCAT || p->kind == FOLD) {
      int sa = (int)slices(n->channels[p->kind == CONCAT ? p->in[0] : out]);
      CL(clSetKernelArg(k, a++, sizeof(int), &sa));
    }
    size_t global[3] = {(size_t)hw, (size_t)hw, slices(n->channels[out])};
    cl_event wait[2];
    cl_uint nw = 0;
    for (int i = 0; i < p->n_in && out_of_order; ++i)
      if (producer[p->in[i]] >= 0) wait[nw++] = done[producer[p->in[i]]];
    CL(clEnqueueNDRangeKernel(q, k, 3, NULL, global, NULL, nw, nw ? wait : NULL,
                              out_of_order ? &done[o] : NULL));
    producer[out] = o;
  }
  CL(clFinish(q));
  for (int o = 0; o < n->ops; ++o)
    if (done[o]) clReleaseEvent(done[o]);
}

/* ---- One planned run: plan, validate, realise in the engine's context, bind, run. */
typedef struct planned_run {
  uint64_t tensors, naive_bytes, planned_bytes, allocations, corrupted, in_place;
  int equal; /* outputs bit-identical to the reference's */
} planned_run;

/* The engine's in-place candidates: an elementwise kernel (scale, relu, add; mul over its first
 * input, the second being one value per channel) may write over an input of its output's shape
 * that dies at that op. Record indices of `mr`. */
static size_t in_place_pairs(const net *n, const tg_lifetimes *lt, const tg_model_records *mr,
                             tg_in_place_pair *out) {
  size_t record_of[MAX_T], np = 0;
  for (int t = 0; t < MAX_T; ++t) record_of[t] = SIZE_MAX;
  for (size_t r = 0; r < mr->records->count; ++r) record_of[mr->tensor_of[r]] = r;
  for (int o = 0; o < n->ops; ++o) {
    const op *p = &n->op[o];
    if (p->kind != SCALE && p->kind != RELU && p->kind != ADD && p->kind != MUL) continue;
    if (record_of[p->out] == SIZE_MAX) continue;
    for (int i = 0; i < (p->kind == MUL ? 1 : p->n_in); ++i) {
      int t = p->in[i];
      if (record_of[t] == SIZE_MAX || lt->tensors[t].last_task != o || n->channels[t] != n->channels[p->out] ||
          n->spatial[t] != n->spatial[p->out])
        continue;
      out[np++] = (tg_in_place_pair){(uint32_t)o, record_of[t], record_of[p->out], 0};
      break;
    }
  }
  return np;
}

static planned_run run_planned(const engine *e, const net *n, const tg_graph *g,
                               const tg_lifetimes *lt, const tg_schedule *sched, int image,
                               tg_mode mode, tg_policy policy, int in_place, cl_command_queue q,
                               float *const *reference) {
  planned_run r = {0, 0, 0, 0, 0, 0, 0};
  tg_error_info err = {{0}};
  /* The device: the engine's context, device and queue, borrowed. */
  tg_opencl_device_desc desc = {e->ctx, e->dev, q, NULL, 0};
  tg_device *dev = NULL;
  TG(tg_device_wrap_opencl(&desc, NULL, &dev, &err), &err);
  const tg_device_info *info = tg_device_get_info(dev);

  /* Records of the planned tensors (not the input and outputs, which the engine keeps). */
  tg_storage storage = image ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER;
  tg_model_records *mr = NULL;
  TG(tg_model_records_create(g, lt, storage, TG_PRECISION_FP32, &info->limits, NULL, &mr, &err),
     &err);
  const tg_record_set *set = mr->records;
  size_t count = set->count;
  r.tensors = count;
  tg_tensor_resource *res = calloc(count, sizeof *res);
  if (res == NULL || mr->fallback->count) exit(1); /* every tensor fits a 2D image here */
  for (size_t i = 0; i < count; ++i) {
    tg_extent x = set->records[i].size;
    res[i] = image ? (tg_tensor_resource){storage, x, x.w * x.h * 16}
                   : (tg_tensor_resource){storage, x, x.w};
    r.naive_bytes += res[i].bytes;
  }
  /* Offsets mode plans byte records with the device's real sizes and alignments. */
  tg_record_set *arena = NULL;
  const tg_record_set *planned = set;
  if (mode == TG_MODE_OFFSETS) {
    TG(tg_device_compute_arena_records(dev, res, set->records, count, TG_PRECISION_FP32, NULL,
                                       &arena),
       NULL);
    planned = arena;
  }
  tg_policy_relation *rel = NULL;
  TG(tg_policy_relation_create(sched, policy, mr->tensor_of, count, NULL, &rel), NULL);
  tg_plan_options po = {0};
  po.mode = mode;
  po.strategy = TG_STRATEGY_BEST;
  po.alignment = mode == TG_MODE_OFFSETS ? info->buffer_alignment : 0;
  po.relation = tg_policy_relation_get(rel);
  tg_in_place_pair pairs[MAX_OPS];
  if (in_place) {
    po.in_place = pairs;
    po.in_place_count = in_place_pairs(n, lt, mr, pairs);
  }
  tg_plan *plan = NULL;
  TG(tg_plan_compute(planned->records, count, planned->dims, &po, NULL, &plan), NULL);
  TG(tg_plan_validate(planned->records, count, planned->dims, plan, po.alignment, po.relation, NULL,
                      &err),
     &err);
  /* On an out-of-order queue the engine orders ops by the graph alone: the plan must add no
   * waits (parallel-safe plans never do). */
  tg_waits *waits = NULL;
  TG(tg_schedule_compute_waits(sched, planned->records, mr->tensor_of, count, plan, NULL, &waits, &err),
     &err);
  int out_of_order = q == e->ooo;
  if (out_of_order && waits->reuse_edge_count) {
    fprintf(stderr, "engine_opencl: the plan needs %zu extra waits\n", waits->reuse_edge_count);
    exit(1);
  }
  tg_waits_destroy(waits);

  /* Realise: one allocation per shared object, or one arena, in the engine's context. */
  tg_realize_desc rd = {plan, planned->records, count, planned->dims, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  TG(tg_realization_create(dev, &rd, NULL, &z, &err), &err);
  tg_realization_stats stats;
  tg_realization_get_stats(z, &stats);
  r.planned_bytes = stats.allocated_bytes;
  r.allocations = stats.allocations;
  r.in_place = plan->in_place_count;
  /* Tangram's own on-device check of the plan, on the engine's queue. */
  tg_check_desc cd = {g, mr->tensor_of, 0, 0, NULL, NULL};
  tg_check_result check = {0, NULL, 0};
  TG(tg_realization_check(z, &cd, &check, &err), &err);
  r.corrupted = check.corrupted_records;

  /* Bind: planned tensors get the realisation's cl_mem, the rest the engine's own. */
  cl_mem mem[MAX_T] = {0};
  for (size_t i = 0; i < count; ++i) {
    tg_opencl_tensor t;
    TG(tg_realization_get_opencl_tensor(z, i, &t), NULL);
    mem[mr->tensor_of[i]] = t.mem;
  }
  int own[MAX_T] = {0};
  for (int t = 0; t < n->tensors; ++t)
    if (mem[t] == NULL) {
      mem[t] = alloc_tensor(e, n, t, image);
      own[t] = 1;
    }
  write_tensor(q, mem[0], n, 0, image, reference[0]);
  run_net(e, n, mem, image, q, out_of_order);
  /* Compare every output with the reference run, bit for bit. */
  for (int i = 0; i < n->n_out; ++i) {
    int t = n->outputs[i];
    size_t bytes = (size_t)n->spatial[t] * n->spatial[t] * slices(n->channels[t]) * 16;
    float *got = malloc(bytes);
    if (got == NULL) exit(1);
    read_tensor(q, mem[t], n, t, image, got);
    r.equal += memcmp(got, reference[1 + i], bytes) == 0;
    free(got);
  }
  for (int t = 0; t < n->tensors; ++t)
    if (own[t]) clReleaseMemObject(mem[t]);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  tg_policy_relation_destroy(rel);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
  tg_device_close(dev); /* the engine's context, device and queue stay as they were */
  return r;
}

int main(void) {
  /* ---- The engine's own OpenCL objects. */
  engine e;
  memset(&e, 0, sizeof e);
  cl_platform_id platform;
  cl_uint np = 0;
  if (clGetPlatformIDs(1, &platform, &np) != CL_SUCCESS || np == 0 ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &e.dev, NULL) != CL_SUCCESS) {
    printf("engine_opencl: no OpenCL device: skipped\n");
    return 77;
  }
  cl_int err;
  e.ctx = clCreateContext(NULL, 1, &e.dev, NULL, NULL, &err);
  CL(err);
  e.in_order = clCreateCommandQueue(e.ctx, e.dev, 0, &err);
  CL(err);
  cl_command_queue_properties qp = 0;
  CL(clGetDeviceInfo(e.dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof qp, &qp, NULL));
  if (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    e.ooo = clCreateCommandQueue(e.ctx, e.dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    CL(err);
  }
  cl_bool img = CL_FALSE;
  CL(clGetDeviceInfo(e.dev, CL_DEVICE_IMAGE_SUPPORT, sizeof img, &img, NULL));
  e.images = img == CL_TRUE;
  cl_program prog[2] = {NULL, NULL};
  for (int image = 0; image <= e.images; ++image) {
    const char *src = k_source;
    prog[image] = clCreateProgramWithSource(e.ctx, 1, &src, NULL, &err);
    CL(err);
    CL(clBuildProgram(prog[image], 1, &e.dev, image ? "-DIMG=1" : "-DIMG=0", NULL, NULL));
    for (int k = 0; k < KINDS; ++k) {
      e.k[image][k] = clCreateKernel(prog[image], k_kernel[k], &err);
      CL(err);
    }
  }
  /* What Tangram can do with this device (it describes it as it would describe its own). */
  tg_error_info terr = {{0}};
  tg_device *probe = NULL;
  tg_opencl_device_desc pd = {e.ctx, e.dev, e.in_order, NULL, 0};
  TG(tg_device_wrap_opencl(&pd, NULL, &probe, &terr), &terr);
  char name[256];
  snprintf(name, sizeof name, "%s", tg_device_get_info(probe)->name);
  int arena_images = tg_device_get_info(probe)->arena_images;
  tg_device_close(probe);

  /* ---- The network, its graph, lifetimes and schedule (the public graph API). */
  net n;
  build_net(&n, e.ctx);
  tg_graph *g = to_graph(&n);
  tg_lifetimes *lt = NULL;
  TG(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &terr), &terr);
  tg_schedule *sched = NULL;
  TG(tg_schedule_create(g, NULL, NULL, &sched, &terr), &terr);
  printf("engine_opencl on %s: out-of-order queue %s, images %s\n", name, e.ooo ? "yes" : "no",
         e.images ? "yes" : "no");
  printf("network: %d ops (dwconv3x3, mean, concat, pointwise), %d tensors, %d outputs\n", n.ops,
         n.tensors, n.n_out);

  int runs = 0, outputs = 0, equal_outputs = 0, clean_checks = 0;
  for (int image = 0; image <= e.images; ++image) {
    /* Reference: one allocation per tensor, in order. reference[0] is the input. */
    float *reference[BLOCKS + 2];
    cl_mem mem[MAX_T];
    for (int t = 0; t < n.tensors; ++t) mem[t] = alloc_tensor(&e, &n, t, image);
    size_t in_bytes = (size_t)H * W * slices(C) * 16;
    reference[0] = malloc(in_bytes);
    if (reference[0] == NULL) return 1;
    for (size_t i = 0; i < in_bytes / 4; ++i)
      reference[0][i] = (float)((int)(i * 37 % 23) - 11) / 4.0f;
    write_tensor(e.in_order, mem[0], &n, 0, image, reference[0]);
    run_net(&e, &n, mem, image, e.in_order, 0);
    for (int i = 0; i < n.n_out; ++i) {
      int t = n.outputs[i];
      reference[1 + i] = malloc((size_t)n.spatial[t] * n.spatial[t] * slices(n.channels[t]) * 16);
      if (reference[1 + i] == NULL) return 1;
      read_tensor(e.in_order, mem[t], &n, t, image, reference[1 + i]);
    }
    for (int t = 0; t < n.tensors; ++t) clReleaseMemObject(mem[t]);

    /* Tangram's plans: objects and offsets; serial in order, parallel-safe out of order. */
    for (int mode = 0; mode < 2; ++mode)
      for (int policy = 0; policy < 2; ++policy)
        for (int in_place = 0; in_place <= !image; ++in_place) {
        const char *storage = image ? "texture_2d" : "buffer";
        if (image && mode == TG_MODE_OFFSETS && !arena_images) {
          if (policy == 0)
            printf(
                "%-10s offsets: images inside an arena need cl_khr_image2d_from_buffer: "
                "skipped\n",
                storage);
          continue;
        }
        cl_command_queue q = policy == TG_POLICY_PARALLEL_SAFE && e.ooo ? e.ooo : e.in_order;
        planned_run r = run_planned(&e, &n, g, lt, sched, image, (tg_mode)mode, (tg_policy)policy,
                                    in_place, q, reference);
        char ip[32] = "";
        if (in_place) snprintf(ip, sizeof ip, ", %llu in place", (unsigned long long)r.in_place);
        printf(
            "%-10s %-7s %-13s %-12s %llu tensors%s in %2llu allocations, %6llu bytes (one "
            "allocation per tensor: %6llu), check: %llu corrupted, outputs equal: %d/%d\n",
            storage, tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)policy),
            q == e.ooo ? "out-of-order" : "in-order", (unsigned long long)r.tensors, ip,
            (unsigned long long)r.allocations, (unsigned long long)r.planned_bytes,
            (unsigned long long)r.naive_bytes, (unsigned long long)r.corrupted, r.equal, n.n_out);
        runs++;
        outputs += n.n_out;
        equal_outputs += r.equal;
        clean_checks += r.corrupted == 0;
      }
    for (int i = 0; i < n.n_out + 1; ++i) free(reference[i]);
  }
  int ok = runs > 0 && equal_outputs == outputs && clean_checks == runs;
  printf("%d planned runs, %d outputs compared bit for bit, %d equal: %s\n", runs, outputs,
         equal_outputs, ok ? "all equal" : "MISMATCH");

  tg_schedule_destroy(sched);
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
  for (int o = 0; o < n.ops; ++o)
    if (n.op[o].weights) clReleaseMemObject(n.op[o].weights);
  for (int image = 0; image <= e.images; ++image) {
    for (int k = 0; k < KINDS; ++k) clReleaseKernel(e.k[image][k]);
    clReleaseProgram(prog[image]);
  }
  if (e.ooo) clReleaseCommandQueue(e.ooo);
  clReleaseCommandQueue(e.in_order);
  clReleaseContext(e.ctx);
  return ok ? 0 : 1;
}
