#define _POSIX_C_SOURCE 200809L
/* Borrowed OpenCL devices (tangram/opencl.h) on a real driver (PoCL on CI). The test plays an
 * engine: it loads OpenCL itself, creates its own context, an in-order and an out-of-order
 * queue and a kernel of its own, and hands them to tg_device_wrap_opencl.
 *
 *  - the device describes the engine's device; after tg_device_close the engine's context and
 *    queues have the reference counts they had before and still run the engine's kernel;
 *  - wrong objects (NULL, a queue of another context, a device not in the context, a queue on
 *    another device) are refused with a message naming the field, never a crash;
 *  - textures on a device without image support are refused at realisation;
 *  - every public model x buffer/2D/array/3D x objects/offsets x serial/parallel-safe realises
 *    through both queues with 0 corrupted records, the handles are cl_mem objects of the
 *    engine's context at the planned offsets, and the engine's kernels write and read them;
 *  - the check runs on the engine's queue (it waits for what the engine enqueued before);
 *  - every device object creation and every host allocation failing in turn: a clean error,
 *    no cl_mem and no host block left, the engine's objects untouched.
 *
 * TANGRAM_TEST_QUICK=1 (sanitizers, valgrind) runs the smallest model only and shorter
 * failure walks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"
#include "support/tg_opencl_live.h"
#include "support/tg_backend_cases.h"
#include "support/tg_models.h"

#ifdef TANGRAM_TEST_HAVE_OPENCL

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/opencl/opencl_debug.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/opencl.h"
#include "tangram/schedule.h"

extern char **environ;

/* ------------------------------------------------------------------------------------------ */
/* The engine: its own OpenCL entry points (loaded at run time, as Tangram does, so that the
 * test links nothing from OpenCL), context, queues and kernels. */

/* clang-format off */
#define CL_FUNCS(X) \
  X(clGetPlatformIDs) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) \
  X(clReleaseContext) X(clGetContextInfo) X(clCreateCommandQueue) X(clReleaseCommandQueue) \
  X(clGetCommandQueueInfo) X(clCreateBuffer) X(clReleaseMemObject) X(clGetMemObjectInfo) \
  X(clCreateProgramWithSource) X(clBuildProgram) X(clReleaseProgram) X(clCreateKernel) \
  X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clEnqueueWriteBuffer) \
  X(clEnqueueReadBuffer) X(clEnqueueReadImage) X(clFinish) X(clCreateUserEvent) \
  X(clSetUserEventStatus) X(clEnqueueBarrierWithWaitList) X(clReleaseEvent)
/* clang-format on */

typedef struct cl_api {
  void *library;
#define CL_FIELD(name) __typeof__(&name) name;
  CL_FUNCS(CL_FIELD)
#undef CL_FIELD
} cl_api;

static int cl_load(cl_api *a) {
  memset(a, 0, sizeof *a);
  const char *forced = getenv("TANGRAM_OPENCL_LIBRARY");
  a->library = dlopen(forced && *forced ? forced : "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (a->library == NULL) return 0;
#define CL_LOAD(name)                     \
  {                                       \
    void *sym = dlsym(a->library, #name); \
    if (sym == NULL) return 0;            \
    memcpy(&a->name, &sym, sizeof sym);   \
  }
  CL_FUNCS(CL_LOAD)
#undef CL_LOAD
  return 1;
}

static const char k_engine_source[] =
    "__kernel void scale_add(__global const float *a, __global float *out, float k) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  out[i] = a[i] * k + (float)i;\n"
    "}\n"
    "__kernel void fill_words(__global uint *p, uint seed) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  p[i] = (i * 2654435761u) ^ seed;\n"
    "}\n"
    "#ifdef HAVE_IMAGES\n"
    "__kernel void fill_image(__write_only image2d_t img, uint seed) {\n"
    "  int x = (int)get_global_id(0), y = (int)get_global_id(1);\n"
    "  write_imagef(img, (int2)(x, y), (float4)((float)x, (float)y, (float)(seed & 1023u), "
    "1.0f));\n"
    "}\n"
    "#endif\n";

typedef struct engine {
  cl_api cl;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue; /* in order */
  cl_command_queue ooo;   /* out of order, or NULL when the device has none */
  cl_program program;
  cl_kernel scale_add, fill_words, fill_image;
  int images;
  cl_uint context_refs, queue_refs, ooo_refs; /* reference counts before Tangram saw them */
} engine;

#define CL_OK(call)                                                  \
  do {                                                               \
    cl_int e_ = (call);                                              \
    if (e_ != CL_SUCCESS) fail_msg("%s failed: %d", #call, (int)e_); \
  } while (0)

static cl_uint context_refs(const engine *e) {
  cl_uint n = 0;
  CL_OK(e->cl.clGetContextInfo(e->context, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

static cl_uint queue_refs(const engine *e, cl_command_queue q) {
  cl_uint n = 0;
  CL_OK(e->cl.clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

/* Drivers drop the references of finished commands from their own threads, a little after
 * clFinish returns: wait (up to 5 s) until the engine's counts are back to `context` (and
 * the queues' to what they were before Tangram saw them). 1 when they are. */
static int refs_settle(const engine *e, cl_uint context) {
  for (int i = 0; i < 500; ++i) {
    if (context_refs(e) == context && queue_refs(e, e->queue) == e->queue_refs &&
        (e->ooo == NULL || queue_refs(e, e->ooo) == e->ooo_refs))
      return 1;
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  return 0;
}

/* The engine's own computation on `q`: out[i] = a[i] * 3 + i, checked exactly. */
static void engine_kernel_runs(const engine *e, cl_command_queue q) {
  enum { N = 4096 };
  float a[N], out[N];
  for (int i = 0; i < N; ++i) a[i] = (float)(i % 97) - 40.0f;
  cl_int err = CL_SUCCESS;
  cl_mem ba = e->cl.clCreateBuffer(e->context, CL_MEM_READ_WRITE, sizeof a, NULL, &err);
  CL_OK(err);
  cl_mem bo = e->cl.clCreateBuffer(e->context, CL_MEM_READ_WRITE, sizeof out, NULL, &err);
  CL_OK(err);
  float k = 3.0f;
  size_t global = N;
  CL_OK(e->cl.clEnqueueWriteBuffer(q, ba, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL));
  CL_OK(e->cl.clSetKernelArg(e->scale_add, 0, sizeof ba, &ba));
  CL_OK(e->cl.clSetKernelArg(e->scale_add, 1, sizeof bo, &bo));
  CL_OK(e->cl.clSetKernelArg(e->scale_add, 2, sizeof k, &k));
  CL_OK(e->cl.clEnqueueNDRangeKernel(q, e->scale_add, 1, NULL, &global, NULL, 0, NULL, NULL));
  CL_OK(e->cl.clFinish(q));
  CL_OK(e->cl.clEnqueueReadBuffer(q, bo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  for (int i = 0; i < N; ++i)
    if (out[i] != a[i] * 3.0f + (float)i) fail_msg("engine kernel: out[%d] = %g", i, out[i]);
  CL_OK(e->cl.clReleaseMemObject(ba));
  CL_OK(e->cl.clReleaseMemObject(bo));
}

/* The engine's objects are as Tangram found them: same reference counts, and they work. */
static void assert_engine_intact(const engine *e) {
  if (!refs_settle(e, e->context_refs))
    fail_msg("the engine's reference counts: context %u (was %u), queue %u (was %u)",
             context_refs(e), e->context_refs, queue_refs(e, e->queue), e->queue_refs);
  engine_kernel_runs(e, e->queue);
  if (e->ooo) engine_kernel_runs(e, e->ooo);
}

static void engine_destroy(engine *e) {
  if (e->cl.library == NULL) return;
  if (e->scale_add) e->cl.clReleaseKernel(e->scale_add);
  if (e->fill_words) e->cl.clReleaseKernel(e->fill_words);
  if (e->fill_image) e->cl.clReleaseKernel(e->fill_image);
  if (e->program) e->cl.clReleaseProgram(e->program);
  if (e->ooo) e->cl.clReleaseCommandQueue(e->ooo);
  if (e->queue) e->cl.clReleaseCommandQueue(e->queue);
  if (e->context) e->cl.clReleaseContext(e->context);
  /* The library stays loaded: drivers leave threads behind. */
  memset(e, 0, sizeof *e);
}

/* Create the engine on the first OpenCL 1.2 device (a GPU if there is one). Returns 0 with
 * `why` set when there is no usable platform. */
static int engine_create(engine *e, char *why, size_t why_size) {
  memset(e, 0, sizeof *e);
  if (!cl_load(&e->cl)) {
    snprintf(why, why_size, "libOpenCL.so.1 cannot be loaded");
    return 0;
  }
  cl_platform_id platforms[8];
  cl_uint np = 0;
  if (e->cl.clGetPlatformIDs(8, platforms, &np) != CL_SUCCESS || np == 0) {
    snprintf(why, why_size, "no OpenCL platform");
    return 0;
  }
  if (np > 8) np = 8;
  for (cl_uint p = 0; p < np && e->device == NULL; ++p) {
    cl_device_id devs[8];
    cl_uint nd = 0;
    if (e->cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 8, devs, &nd) != CL_SUCCESS)
      continue;
    if (nd > 8) nd = 8;
    for (cl_uint i = 0; i < nd; ++i) {
      char version[128] = {0};
      int major = 0, minor = 0;
      e->cl.clGetDeviceInfo(devs[i], CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
      if (sscanf(version, "OpenCL %d.%d", &major, &minor) != 2 || major * 100 + minor < 102)
        continue;
      cl_device_type type = 0;
      e->cl.clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      if (e->device == NULL || (type & CL_DEVICE_TYPE_GPU)) e->device = devs[i];
    }
  }
  if (e->device == NULL) {
    snprintf(why, why_size, "no OpenCL 1.2 device");
    return 0;
  }
  cl_int err = CL_SUCCESS;
  e->context = e->cl.clCreateContext(NULL, 1, &e->device, NULL, NULL, &err);
  CL_OK(err);
  e->queue = e->cl.clCreateCommandQueue(e->context, e->device, 0, &err);
  CL_OK(err);
  cl_command_queue_properties props = 0;
  CL_OK(e->cl.clGetDeviceInfo(e->device, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, NULL));
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    e->ooo = e->cl.clCreateCommandQueue(e->context, e->device,
                                        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    CL_OK(err);
  }
  cl_bool images = CL_FALSE;
  CL_OK(e->cl.clGetDeviceInfo(e->device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
  e->images = images == CL_TRUE;
  const char *src = k_engine_source;
  e->program = e->cl.clCreateProgramWithSource(e->context, 1, &src, NULL, &err);
  CL_OK(err);
  CL_OK(e->cl.clBuildProgram(e->program, 1, &e->device, e->images ? "-DHAVE_IMAGES" : "", NULL,
                             NULL));
  e->scale_add = e->cl.clCreateKernel(e->program, "scale_add", &err);
  CL_OK(err);
  e->fill_words = e->cl.clCreateKernel(e->program, "fill_words", &err);
  CL_OK(err);
  if (e->images) {
    e->fill_image = e->cl.clCreateKernel(e->program, "fill_image", &err);
    CL_OK(err);
  }
  e->context_refs = context_refs(e);
  e->queue_refs = queue_refs(e, e->queue);
  if (e->ooo) e->ooo_refs = queue_refs(e, e->ooo);
  return 1;
}

static tg_status wrap(const engine *e, cl_command_queue q, uint64_t fail_at,
                      const tg_allocator *alloc, tg_device **out, tg_error_info *err) {
  tg_opencl_device_desc desc = {e->context, e->device, q, NULL, fail_at};
  return tg_device_wrap_opencl(&desc, alloc, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* Suite. */

/* The engine, and for each test the borrowed devices it wraps: each test closes its devices
 * before it ends, so the engine's reference counts are checked against the ones it had
 * before Tangram saw it. */
typedef struct suite {
  engine e;
  int ready;
  tg_device_info info; /* of a device on the engine's queue */
  tg_device *in_order; /* on e.queue, while a test runs */
  tg_device *ooo;      /* on e.ooo (NULL without one), while a test runs */
} suite;

static char g_self[1024];

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  char why[256] = {0};
  if (!engine_create(&s->e, why, sizeof why)) {
    engine_destroy(&s->e);
    if (tg_test_in_ci()) {
      fprintf(stderr, "FAILURE: no usable OpenCL device under CI: %s\n", why);
      free(s);
      return -1;
    }
    fprintf(stderr, "\n*** SKIPPING the borrowed OpenCL tests: %s ***\n\n", why);
    *state = s;
    return 0;
  }
  tg_error_info err = {{0}};
  tg_device *d = NULL;
  if (wrap(&s->e, s->e.queue, 0, NULL, &d, &err) != TG_OK) {
    fprintf(stderr, "FAILURE: wrapping the engine's objects: %s\n", err.message);
    engine_destroy(&s->e);
    free(s);
    return -1;
  }
  s->info = *tg_device_get_info(d);
  tg_device_close(d);
  s->ready = 1;
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  suite *s = *state;
  if (s == NULL) return 0;
  engine_destroy(&s->e);
  free(s);
  return 0;
}

/* Wrap the engine's queues for one test (skip without a device). */
static int test_setup(void **state) {
  suite *s = *state;
  if (!s->ready) return 0;
  tg_error_info err = {{0}};
  if (wrap(&s->e, s->e.queue, 0, NULL, &s->in_order, &err) != TG_OK) {
    fprintf(stderr, "wrapping the engine's in-order queue: %s\n", err.message);
    return -1;
  }
  if (s->e.ooo && wrap(&s->e, s->e.ooo, 0, NULL, &s->ooo, &err) != TG_OK) {
    fprintf(stderr, "wrapping the engine's out-of-order queue: %s\n", err.message);
    return -1;
  }
  return 0;
}

/* Close them: the engine's objects are then exactly as before. */
static int test_teardown(void **state) {
  suite *s = *state;
  tg_device_close(s->ooo);
  tg_device_close(s->in_order);
  s->ooo = s->in_order = NULL;
  if (s->ready) assert_engine_intact(&s->e);
  return 0;
}

#define REQUIRE_DEVICE(s)    \
  do {                       \
    if (!(s)->ready) skip(); \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Models: tests/support/tg_models.h. */

/* ------------------------------------------------------------------------------------------ */
/* The engine on realised memory. */

static cl_mem mem_info_mem(const engine *e, cl_mem m, cl_mem_info what) {
  cl_mem v = NULL;
  CL_OK(e->cl.clGetMemObjectInfo(m, what, sizeof v, &v, NULL));
  return v;
}

static size_t mem_info_size(const engine *e, cl_mem m, cl_mem_info what) {
  size_t v = 0;
  CL_OK(e->cl.clGetMemObjectInfo(m, what, sizeof v, &v, NULL));
  return v;
}

/* Every handle is a cl_mem of the engine's context where the plan puts it. */
static void check_handles(const engine *e, tg_realization *z, const tg_plan *plan,
                          const tg_tensor_resource *res, size_t count) {
  cl_mem arena = NULL;
  for (size_t r = 0; r < count; ++r) {
    tg_opencl_tensor t;
    memset(&t, 0, sizeof t);
    assert_int_equal(tg_realization_get_opencl_tensor(z, r, &t), TG_OK);
    int image = tg_storage_dims(res[r].storage) > 1;
    if (image) {
      assert_int_equal(t.region.w, res[r].extent.w);
      assert_int_equal(t.region.h, res[r].extent.h);
      assert_int_equal(t.region.d, res[r].extent.d);
    } else {
      assert_int_equal(t.region.w, res[r].bytes);
    }
    if (res[r].bytes == 0) continue;
    assert_non_null(t.mem);
    assert_non_null(t.memory);
    cl_context ctx = NULL;
    CL_OK(e->cl.clGetMemObjectInfo(t.mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL));
    assert_ptr_equal(ctx, e->context);
    if (plan->mode == TG_MODE_OBJECTS) {
      /* The tensor is the start of its object. */
      assert_ptr_equal(t.mem, t.memory);
      assert_int_equal(t.offset, 0);
      if (!image) assert_true(mem_info_size(e, t.mem, CL_MEM_SIZE) >= res[r].bytes);
    } else {
      /* One arena; each buffer tensor a sub-buffer of exactly its bytes at its offset. */
      if (arena == NULL) arena = t.memory;
      assert_ptr_equal(t.memory, arena);
      assert_int_equal(t.offset, plan->offset_of[r]);
      if (!image) {
        assert_ptr_equal(mem_info_mem(e, t.mem, CL_MEM_ASSOCIATED_MEMOBJECT), t.memory);
        assert_int_equal(mem_info_size(e, t.mem, CL_MEM_OFFSET), t.offset);
        assert_int_equal(mem_info_size(e, t.mem, CL_MEM_SIZE), res[r].bytes);
      }
    }
  }
}

/* The engine writes a tensor with its own kernel and reads it back, through the tensor's
 * cl_mem and (offsets mode) through the arena at the tensor's offset. */
static void engine_uses_tensor(const engine *e, cl_command_queue q, tg_realization *z, size_t r,
                               const tg_tensor_resource *res, uint32_t seed) {
  tg_opencl_tensor t;
  memset(&t, 0, sizeof t);
  assert_int_equal(tg_realization_get_opencl_tensor(z, r, &t), TG_OK);
  if (t.mem == NULL) return;
  if (res->storage == TG_STORAGE_BUFFER) {
    size_t words = (size_t)(res->bytes / 4);
    if (words == 0) return;
    uint32_t *got = malloc(words * 4);
    assert_non_null(got);
    CL_OK(e->cl.clSetKernelArg(e->fill_words, 0, sizeof t.mem, &t.mem));
    CL_OK(e->cl.clSetKernelArg(e->fill_words, 1, sizeof seed, &seed));
    CL_OK(e->cl.clEnqueueNDRangeKernel(q, e->fill_words, 1, NULL, &words, NULL, 0, NULL, NULL));
    CL_OK(e->cl.clFinish(q));
    for (int via_arena = 0; via_arena < (t.mem != t.memory ? 2 : 1); ++via_arena) {
      memset(got, 0, words * 4);
      CL_OK(e->cl.clEnqueueReadBuffer(q, via_arena ? t.memory : t.mem, CL_TRUE,
                                      via_arena ? t.offset : 0, words * 4, got, 0, NULL, NULL));
      for (size_t i = 0; i < words; ++i)
        if (got[i] != (((uint32_t)i * 2654435761u) ^ seed))
          fail_msg("tensor %zu word %zu (%s): %08x", r, i, via_arena ? "via the arena" : "",
                   got[i]);
    }
    free(got);
  } else if (res->storage == TG_STORAGE_TEXTURE_2D && e->fill_image) {
    size_t region[3] = {(size_t)res->extent.w, (size_t)res->extent.h, 1};
    size_t origin[3] = {0, 0, 0};
    float *got = calloc(region[0] * region[1] * 4, sizeof *got);
    assert_non_null(got);
    CL_OK(e->cl.clSetKernelArg(e->fill_image, 0, sizeof t.mem, &t.mem));
    CL_OK(e->cl.clSetKernelArg(e->fill_image, 1, sizeof seed, &seed));
    CL_OK(e->cl.clEnqueueNDRangeKernel(q, e->fill_image, 2, NULL, region, NULL, 0, NULL, NULL));
    CL_OK(e->cl.clFinish(q));
    CL_OK(e->cl.clEnqueueReadImage(q, t.mem, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
    for (size_t y = 0; y < region[1]; ++y)
      for (size_t x = 0; x < region[0]; ++x) {
        const float *v = got + 4 * (y * region[0] + x);
        if (v[0] != (float)x || v[1] != (float)y || v[2] != (float)(seed & 1023u) || v[3] != 1.0f)
          fail_msg("tensor %zu texel (%zu,%zu): %g %g %g %g", r, x, y, v[0], v[1], v[2], v[3]);
      }
    free(got);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Tests. */

/* The wrapped devices describe the engine's device as tg_device_open describes it. */
static void wrap_describes_the_engine_device(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  const tg_device_info *i = &s->info;
  char name[256] = {0};
  CL_OK(s->e.cl.clGetDeviceInfo(s->e.device, CL_DEVICE_NAME, sizeof name - 1, name, NULL));
  print_message(
      "engine device: %s (%s), %s; images %d, out of order (in-order queue) %d, "
      "(out-of-order queue) %d\n",
      i->name, i->kind, i->driver, i->images, i->out_of_order,
      s->ooo ? tg_device_get_info(s->ooo)->out_of_order : -1);
  assert_int_equal(i->backend, TG_BACKEND_OPENCL);
  assert_string_equal(i->name, name);
  assert_int_equal(i->out_of_order, 0); /* the engine gave an in-order queue */
  if (s->ooo) assert_int_equal(tg_device_get_info(s->ooo)->out_of_order, 1);
  assert_int_equal(i->images, s->e.images);
  /* Tangram's own device on the same driver reports the same capabilities. */
  tg_device_options opt = {0};
  opt.backend = TG_BACKEND_OPENCL;
  opt.device = name;
  tg_device *own = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &own, NULL, NULL, &err) == TG_OK) {
    const tg_device_info *o = tg_device_get_info(own);
    assert_string_equal(o->name, i->name);
    assert_string_equal(o->driver, i->driver);
    assert_int_equal(o->buffer_alignment, i->buffer_alignment);
    assert_int_equal(o->image_alignment, i->image_alignment);
    assert_int_equal(o->max_allocation, i->max_allocation);
    assert_int_equal(o->memory_budget, i->memory_budget);
    assert_int_equal(o->images, i->images);
    assert_int_equal(o->fp16_images, i->fp16_images);
    assert_int_equal(o->arena_images, i->arena_images);
    assert_memory_equal(&o->limits, &i->limits, sizeof o->limits);
    tg_device_close(own);
  }
  const tg_device_info *again = tg_device_get_info(s->in_order);
  assert_string_equal(again->name, i->name);
  assert_int_equal(again->buffer_alignment, i->buffer_alignment);
  assert_int_equal(again->images, i->images);
}

/* Run this executable with two PoCL devices in one platform and print what wrapping a device
 * that is not in the context, or a queue on the other device, gives. */
static int run_probe_two_devices(void) {
  engine e;
  memset(&e, 0, sizeof e);
  if (!cl_load(&e.cl)) return 1;
  cl_platform_id platform;
  cl_uint np = 0;
  if (e.cl.clGetPlatformIDs(1, &platform, &np) != CL_SUCCESS || np == 0) return 1;
  cl_device_id devs[2];
  cl_uint nd = 0;
  if (e.cl.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, devs, &nd) != CL_SUCCESS) return 1;
  printf("devices=%u\n", (unsigned)nd);
  if (nd < 2) return 0;
  cl_int err = CL_SUCCESS;
  cl_context one = e.cl.clCreateContext(NULL, 1, &devs[0], NULL, NULL, &err);
  cl_context both = e.cl.clCreateContext(NULL, 2, devs, NULL, NULL, &err);
  cl_command_queue q_one = e.cl.clCreateCommandQueue(one, devs[0], 0, &err);
  cl_command_queue q_second = e.cl.clCreateCommandQueue(both, devs[1], 0, &err);
  if (!one || !both || !q_one || !q_second) return 1;
  struct {
    const char *what;
    tg_opencl_device_desc desc;
  } cases[3] = {{"device-not-in-context", {one, devs[1], q_one, NULL, 0}},
                {"queue-on-other-device", {both, devs[0], q_second, NULL, 0}},
                {"second-device", {both, devs[1], q_second, NULL, 0}}};
  for (int c = 0; c < 3; ++c) {
    tg_device *d = NULL;
    tg_error_info why = {{0}};
    tg_status st = tg_device_wrap_opencl(&cases[c].desc, NULL, &d, &why);
    printf("%s: %s: %s\n", cases[c].what, tg_status_name(st), st == TG_OK ? "" : why.message);
    tg_device_close(d);
  }
  e.cl.clReleaseCommandQueue(q_one);
  e.cl.clReleaseCommandQueue(q_second);
  e.cl.clReleaseContext(one);
  e.cl.clReleaseContext(both);
  return 0;
}

static void probe_two_devices(char *out, size_t size) {
  char *two[] = {(char *)"POCL_DEVICES=basic basic", NULL};
  tg_test_probe(g_self, "--probe-two-devices", NULL, two, out, size);
}

/* Wrong objects: a clear error naming the field, nothing created, the engine untouched. */
static void wrong_objects_are_refused(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine *e = &s->e;
  tg_device *d = (tg_device *)1;
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_wrap_opencl(NULL, NULL, &d, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(d);
  assert_non_null(strstr(err.message, "desc"));
  assert_int_equal(tg_device_wrap_opencl(NULL, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  struct {
    tg_opencl_device_desc desc;
    const char *field;
  } nulls[3] = {{{NULL, e->device, e->queue, NULL, 0}, "desc->context"},
                {{e->context, NULL, e->queue, NULL, 0}, "desc->device"},
                {{e->context, e->device, NULL, NULL, 0}, "desc->queue"}};
  for (int c = 0; c < 3; ++c) {
    d = (tg_device *)1;
    assert_int_equal(tg_device_wrap_opencl(&nulls[c].desc, NULL, &d, &err),
                     TG_ERROR_INVALID_ARGUMENT);
    assert_null(d);
    assert_non_null(strstr(err.message, nulls[c].field));
  }
  /* A queue of another context (on the same device). */
  cl_int ce = CL_SUCCESS;
  cl_context other = e->cl.clCreateContext(NULL, 1, &e->device, NULL, NULL, &ce);
  CL_OK(ce);
  cl_command_queue other_queue = e->cl.clCreateCommandQueue(other, e->device, 0, &ce);
  CL_OK(ce);
  tg_opencl_device_desc desc = {e->context, e->device, other_queue, NULL, 0};
  assert_int_equal(tg_device_wrap_opencl(&desc, NULL, &d, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(d);
  print_message("queue of another context: %s\n", err.message);
  assert_non_null(strstr(err.message, "desc->queue belongs to another cl_context"));
  /* The other context with the engine's queue. */
  desc = (tg_opencl_device_desc){other, e->device, e->queue, NULL, 0};
  assert_int_equal(tg_device_wrap_opencl(&desc, NULL, &d, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "another cl_context"));
  /* The other context's objects are fine together. */
  desc = (tg_opencl_device_desc){other, e->device, other_queue, NULL, 0};
  assert_int_equal(tg_device_wrap_opencl(&desc, NULL, &d, &err), TG_OK);
  tg_device_close(d);
  CL_OK(e->cl.clReleaseCommandQueue(other_queue));
  CL_OK(e->cl.clReleaseContext(other));
  /* A library that cannot be loaded. */
  desc = (tg_opencl_device_desc){e->context, e->device, e->queue, "/nonexistent/libOpenCL.so.1", 0};
  assert_int_equal(tg_device_wrap_opencl(&desc, NULL, &d, &err), TG_ERROR_NO_LOADER);
  assert_null(d);
  assert_non_null(strstr(err.message, "/nonexistent/libOpenCL.so.1"));
  /* Host memory running out at each allocation of the wrap. */
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_status st = wrap(e, e->queue, 0, &fa.base, &d, &err);
    tg_device_close(d);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
    assert_null(d);
  }
  /* A device not in the context, and a queue on another device of the context: PoCL with two
   * devices, in a fresh process (PoCL reads POCL_DEVICES once). */
  char out[4096];
  probe_two_devices(out, sizeof out);
  print_message("%s", out);
  if (strstr(out, "devices=2") == NULL) {
    print_message("the platform ignores POCL_DEVICES: the two-device cases are not run\n");
    return;
  }
  assert_non_null(strstr(out,
                         "device-not-in-context: TG_ERROR_INVALID_ARGUMENT: tg_device_wrap_opencl: OpenCL device: "
                         "desc->device is not one of the 1 device(s) of desc->context"));
  assert_non_null(strstr(out,
                         "queue-on-other-device: TG_ERROR_INVALID_ARGUMENT: tg_device_wrap_opencl: OpenCL device: "
                         "desc->queue is on another device"));
  assert_non_null(strstr(out, "second-device: TG_OK"));
}

/* Textures on a device without image support: refused when realising, with a clear error. */
static void textures_need_image_support(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(wrap(&s->e, s->e.queue, 0, NULL, &d, &err), TG_OK);
  assert_int_equal(tg__opencl_debug_hide_images(d), TG_OK);
  tg_usage_record recs[2] = {{{16, 8, 1}, 0, 1, 0}, {{8, 8, 1}, 1, 2, 0}};
  tg_plan *plan = NULL;
  tg_plan_options po = {0};
  po.strategy = TG_STRATEGY_BEST;
  assert_int_equal(tg_plan_compute(recs, 2, 2, &po, NULL, &plan), TG_OK);
  tg_test_assert_valid(recs, 2, 2, plan, 0, NULL);
  tg_tensor_resource res[2] = {{TG_STORAGE_TEXTURE_2D, {16, 8, 1}, 16 * 8 * 16},
                               {TG_STORAGE_TEXTURE_2D, {8, 8, 1}, 8 * 8 * 16}};
  tg_realize_desc desc = {plan, recs, 2, 2, res, TG_PRECISION_FP32, 0};
  tg_realization *z = (tg_realization *)1;
  assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_ERROR_UNSUPPORTED);
  assert_null(z);
  print_message("textures without images: %s\n", err.message);
  assert_non_null(strstr(err.message, "no image support"));
  assert_int_equal(tg_test_opencl_live(d), 0);
  /* Buffers still realise and check clean on it. */
  tg_usage_record brecs[2] = {{{1000, 1, 1}, 0, 1, 0}, {{512, 1, 1}, 1, 2, 0}};
  tg_plan *bplan = NULL;
  assert_int_equal(tg_plan_compute(brecs, 2, 1, &po, NULL, &bplan), TG_OK);
  tg_tensor_resource bres[2] = {{TG_STORAGE_BUFFER, {1000, 1, 1}, 1000},
                                {TG_STORAGE_BUFFER, {512, 1, 1}, 512}};
  tg_realize_desc bdesc = {bplan, brecs, 2, 1, bres, TG_PRECISION_FP32, 0};
  assert_int_equal(tg_realization_create(d, &bdesc, NULL, &z, &err), TG_OK);
  tg_test_check_clean(z);
  tg_device_close(d);
  tg_plan_destroy(plan);
  tg_plan_destroy(bplan);
}

typedef struct case_result {
  uint64_t allocations, bytes, corrupted, ooo_corrupted, checks;
  size_t reuse_edges;
  int fallback;
} case_result;

/* Realise on one borrowed device, look at the handles, check in order (and out of order on an
 * out-of-order queue), and let the engine use a few tensors. */
static void realise_on(suite *s, tg_device *d, cl_command_queue q, const tg_test_model *m,
                       const tg_record_set *set, const uint32_t *tensor_of,
                       const tg_tensor_resource *res, const tg_plan *plan, case_result *out) {
  tg_error_info err = {{0}};
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  if (tg_realization_create(d, &desc, NULL, &z, &err) != TG_OK)
    fail_msg("%s: realize: %s", m->name, err.message);
  const tg_realization_stats stats = tg_test_realization_counts(z, plan, set->count);
  out->allocations = stats.allocations;
  out->bytes = stats.allocated_bytes;
  check_handles(&s->e, z, plan, res, set->count);

  tg_check_desc cd = {m->model->graph, tensor_of, 0, 0, NULL, NULL};
  tg_check_result in = {0, NULL, 0};
  if (tg_realization_check(z, &cd, &in, &err) != TG_OK)
    fail_msg("%s: check: %s", m->name, err.message);
  assert_true(in.checked_bytes > 0);
  out->corrupted += in.corrupted_records;
  out->checks++;
  assert_int_equal(in.corrupted_records, 0);
  if (tg_device_get_info(d)->out_of_order) {
    tg_waits *w = NULL;
    if (tg_schedule_compute_waits(m->schedule, set->records, tensor_of, set->count, plan, NULL, &w,
                                  &err) != TG_OK)
      fail_msg("%s: waits: %s", m->name, err.message);
    out->reuse_edges = w->reuse_edge_count;
    tg_test_op_waits ow;
    tg_test_op_waits_build(w, 1, &ow);
    tg_check_desc od = {m->model->graph, tensor_of, 1, ow.op_count, ow.counts, ow.lists};
    tg_check_result ooo = {0, NULL, 0};
    if (tg_realization_check(z, &od, &ooo, &err) != TG_OK)
      fail_msg("%s: out-of-order check: %s", m->name, err.message);
    out->ooo_corrupted += ooo.corrupted_records;
    out->checks++;
    assert_int_equal(ooo.corrupted_records, 0);
    assert_int_equal(ooo.checked_bytes, in.checked_bytes);
    tg_test_op_waits_free(&ow);
    tg_waits_destroy(w);
  }
  /* The engine's kernels on the first, the largest and the last tensor. */
  size_t largest = 0;
  for (size_t r = 1; r < set->count; ++r)
    if (res[r].bytes > res[largest].bytes) largest = r;
  if (set->count) {
    engine_uses_tensor(&s->e, q, z, 0, &res[0], 11);
    engine_uses_tensor(&s->e, q, z, largest, &res[largest], 22);
    engine_uses_tensor(&s->e, q, z, set->count - 1, &res[set->count - 1], 33);
  }
  tg_realization_destroy(z);
  assert_int_equal(tg_test_opencl_live(d), 0);
}

static void run_case(suite *s, const tg_test_model *m, tg_storage storage, tg_mode mode,
                     tg_policy policy, int *offsets_as_objects, case_result *out) {
  memset(out, 0, sizeof *out);
  tg_model_records *mr = tg_test_model_records(m, storage, TG_PRECISION_FP32, &s->info.limits);
  const tg_record_set *set = mr->records;
  tg_policy_relation *rel = NULL;
  assert_int_equal(
      tg_policy_relation_create(m->schedule, policy, mr->tensor_of, set->count, NULL, &rel), TG_OK);
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  /* A device that cannot place images in an arena realises image plans as objects
   * (test_opencl covers the refusal). */
  *offsets_as_objects =
      mode == TG_MODE_OFFSETS && tg_storage_dims(storage) > 1 && !s->info.arena_images;
  tg_mode real_mode = *offsets_as_objects ? TG_MODE_OBJECTS : mode;
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(s->in_order, set, res, TG_PRECISION_FP32, real_mode,
                                          tg_policy_relation_get(rel), 1, &arena);
  realise_on(s, s->in_order, s->e.queue, m, set, mr->tensor_of, res, plan, out);
  if (s->ooo) realise_on(s, s->ooo, s->e.ooo, m, set, mr->tensor_of, res, plan, out);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  /* Tensors that did not fit the texture storage: buffers of their own plan. */
  if (mr->fallback->count) {
    out->fallback = 1;
    tg_tensor_resource *fres = tg_test_resources_for(mr->fallback, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
    tg_record_set *farena = NULL;
    tg_plan *fplan =
        tg_test_plan_for_device(s->in_order, mr->fallback, fres, TG_PRECISION_FP32, mode, NULL, 1, &farena);
    case_result fr;
    memset(&fr, 0, sizeof fr);
    realise_on(s, s->ooo ? s->ooo : s->in_order, s->ooo ? s->e.ooo : s->e.queue, m, mr->fallback,
               mr->fallback_tensor_of, fres, fplan, &fr);
    out->corrupted += fr.corrupted;
    out->ooo_corrupted += fr.ooo_corrupted;
    out->checks += fr.checks;
    tg_plan_destroy(fplan);
    tg_record_set_destroy(farena);
    free(fres);
  }
  free(res);
  tg_policy_relation_destroy(rel);
  tg_model_records_destroy(mr);
}

/* The model matrix through both queues. */
static void models_realise_clean_borrowed(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  static const tg_policy policies[] = {TG_POLICY_SERIAL, TG_POLICY_PARALLEL_SAFE};
  /* Quick: the model with the fewest tensors (hand_landmark_lite) only. */
  size_t first = tg_test_quick() ? 2 : 0, models = tg_test_quick() ? 3 : TG_TEST_GPU_MODEL_COUNT;
  print_message("%-28s %-13s %-8s %-13s %5s %10s %6s %4s %4s %5s\n", "model", "storage", "mode",
                "policy", "alloc", "bytes", "checks", "corr", "ooo", "reuse");
  size_t cases = 0, checks = 0;
  uint64_t corrupted = 0;
  for (size_t mi = first; mi < models; ++mi) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[mi], &md)) continue;
    for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
      for (int mode = 0; mode < 2; ++mode)
        for (size_t pi = 0; pi < 2; ++pi) {
          case_result r;
          int as_objects = 0;
          run_case(s, &md, tg_test_gpu_storages[si], (tg_mode)mode, policies[pi], &as_objects, &r);
          print_message("%-28s %-13s %-8s %-13s %5llu %10llu %6llu %4llu %4llu %5zu%s\n",
                        tg_test_gpu_models[mi], tg_storage_name(tg_test_gpu_storages[si]),
                        mode == 0    ? "objects"
                        : as_objects ? "off->obj"
                                     : "offsets",
                        tg_policy_name(policies[pi]), (unsigned long long)r.allocations,
                        (unsigned long long)r.bytes, (unsigned long long)r.checks,
                        (unsigned long long)r.corrupted, (unsigned long long)r.ooo_corrupted,
                        r.reuse_edges, r.fallback ? " (+fallback buffers)" : "");
          ++cases;
          checks += r.checks;
          corrupted += r.corrupted + r.ooo_corrupted;
        }
    tg_test_model_close(&md);
  }
  print_message("%zu cases, %zu on-device checks through the engine's queues, %llu corrupted\n",
                cases, checks, (unsigned long long)corrupted);
  assert_int_equal(corrupted, 0);
}

/* The check runs on the engine's queue: while the engine holds the queue with a barrier on an
 * event of its own, the check cannot finish; once released, it completes clean. */
typedef struct check_thread {
  tg_realization *z;
  int out_of_order;
  tg_status status;
  tg_check_result result;
  atomic_int done;
} check_thread;

static void *run_check(void *arg) {
  check_thread *t = arg;
  static const uint32_t w1[] = {0}, w2[] = {1};
  const uint32_t *lists[3] = {NULL, w1, w2};
  uint32_t counts[3] = {0, 1, 1};
  tg_check_desc cd = {NULL,
                      NULL,
                      t->out_of_order,
                      3,
                      t->out_of_order ? counts : NULL,
                      t->out_of_order ? lists : NULL};
  t->status = tg_realization_check(t->z, &cd, &t->result, NULL);
  atomic_store(&t->done, 1);
  return NULL;
}

static void check_runs_on_the_engine_queue(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine *e = &s->e;
  /* PoCL's single-threaded device runs commands in the thread that completes a user event and
   * deadlocks when another thread enqueues meanwhile (POCL_DEVICES=basic, as under valgrind). */
  if (strncmp(s->info.name, "basic", 5) == 0) {
    print_message("PoCL's basic device cannot complete a user event during another thread's "
                  "enqueues: skipped\n");
    skip();
  }
  tg_usage_record recs[3] = {
      {{4096, 1, 1}, 0, 1, 0}, {{4096, 1, 1}, 1, 2, 0}, {{1024, 1, 1}, 2, 2, 0}};
  tg_tensor_resource res[3];
  tg_test_buffer_resources(recs, 3, res);
  tg_plan_options po = {0};
  po.strategy = TG_STRATEGY_BEST;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(recs, 3, 1, &po, NULL, &plan), TG_OK);
  tg_test_assert_valid(recs, 3, 1, plan, 0, NULL);
  for (int qi = 0; qi < (s->ooo ? 2 : 1); ++qi) {
    tg_device *d = qi ? s->ooo : s->in_order;
    cl_command_queue q = qi ? e->ooo : e->queue;
    tg_realize_desc desc = {plan, recs, 3, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
    cl_int ce = CL_SUCCESS;
    cl_event gate = e->cl.clCreateUserEvent(e->context, &ce);
    CL_OK(ce);
    CL_OK(e->cl.clEnqueueBarrierWithWaitList(q, 1, &gate, NULL));
    check_thread t;
    memset(&t, 0, sizeof t);
    t.z = z;
    t.out_of_order = qi;
    atomic_init(&t.done, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_check, &t), 0);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int finished_early = atomic_load(&t.done);
    CL_OK(e->cl.clSetUserEventStatus(gate, CL_COMPLETE));
    assert_int_equal(pthread_join(th, NULL), 0);
    CL_OK(e->cl.clReleaseEvent(gate));
    print_message("%s queue: the check %s while the engine held its queue\n",
                  qi ? "out-of-order" : "in-order", finished_early ? "FINISHED" : "waited");
    assert_false(finished_early);
    assert_int_equal(t.status, TG_OK);
    assert_int_equal(t.result.corrupted_records, 0);
    assert_true(t.result.checked_bytes > 0);
    tg_realization_destroy(z);
  }
  tg_plan_destroy(plan);
}

/* Every device object creation of a model's realisation fails in turn through a borrowed
 * device: TG_ERROR_OUT_OF_DEVICE_MEMORY, no cl_mem and no host block left, the engine's
 * context back at its reference count, its queues and kernel working. */
static void walk_failures(suite *s, const tg_test_model *md, tg_storage storage, tg_mode mode,
                          uint64_t *points) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  mr = tg_test_model_records(md, storage, TG_PRECISION_FP32, &s->info.limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(s->in_order, set, res, TG_PRECISION_FP32, mode, NULL, 1, &arena);
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    cl_command_queue q = (n % 2 && s->e.ooo) ? s->e.ooo : s->e.queue;
    tg_device *d = NULL;
    assert_int_equal(wrap(&s->e, q, n, &fa.base, &d, &err), TG_OK);
    tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_status st = tg_realization_create(d, &desc, &fa.base, &z, &err);
    if (st == TG_OK) {
      tg_test_check_clean(z);
      assert_int_equal(tg_test_opencl_live(d), 0);
      tg_device_close(d);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
      fail_msg("N=%llu: %s", (unsigned long long)n, err.message);
    assert_null(z);
    assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    if (tg_test_opencl_live(d) != 0)
      fail_msg("N=%llu: %llu cl_mem leaked", (unsigned long long)n,
               (unsigned long long)tg_test_opencl_live(d));
    /* Nothing of the failed realisation holds the engine's context any more. */
    if (!refs_settle(&s->e, s->e.context_refs))
      fail_msg("N=%llu: the engine's context stays at %u references (was %u)",
               (unsigned long long)n, context_refs(&s->e), s->e.context_refs);
    tg_device_close(d);
    assert_int_equal(fa.live_blocks, 0);
    engine_kernel_runs(&s->e, q);
  }
  assert_int_equal(n - 1, (mode == TG_MODE_OBJECTS ? plan->object_count : 1) + set->count);
  print_message("%s %s %s: %llu failure points, each rolled back\n", md->name,
                tg_storage_name(storage), tg_mode_name(mode), (unsigned long long)(n - 1));
  *points += n - 1;
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
}

static void device_alloc_failures_roll_back_borrowed(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open(tg_test_quick() ? "hand_landmark_lite" : "pose_landmark_lite", &md)) skip();
  uint64_t points = 0;
  walk_failures(s, &md, TG_STORAGE_BUFFER, TG_MODE_OBJECTS, &points);
  walk_failures(s, &md, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, &points);
  if (s->info.images) {
    walk_failures(s, &md, TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS, &points);
    if (!tg_test_quick()) {
      walk_failures(s, &md, TG_STORAGE_TEXTURE_ARRAY, TG_MODE_OBJECTS, &points);
      walk_failures(s, &md, TG_STORAGE_TEXTURE_3D, TG_MODE_OBJECTS, &points);
    }
  }
  print_message("%llu failure points in all\n", (unsigned long long)points);
  tg_test_model_close(&md);
}

/* Every host allocation of wrap + realise + check (in order and out of order) + close fails
 * in turn: a clean status, nothing leaks, the engine's objects untouched. */
static void host_alloc_failures_roll_back_borrowed(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_usage_record recs[4];
  tg_tensor_resource res[4];
  tg_test_walk_buffers(recs, res);
  for (int qi = 0; qi < (s->e.ooo ? 2 : 1); ++qi)
    for (int mode = 0; mode < 2; ++mode) {
      tg_plan_options po = {0};
      po.mode = (tg_mode)mode;
      po.strategy = TG_STRATEGY_BEST;
      po.alignment = mode ? s->info.buffer_alignment : 0;
      tg_plan *plan = NULL;
      assert_int_equal(tg_plan_compute(recs, 4, 1, &po, NULL, &plan), TG_OK);
      tg_test_assert_valid(recs, 4, 1, plan, po.alignment, NULL);
      uint64_t n;
      for (n = 1;; ++n) {
        tg_failing_allocator fa;
        tg_failing_allocator_init(&fa, NULL, n);
        tg_device *d = NULL;
        tg_status st = wrap(&s->e, qi ? s->e.ooo : s->e.queue, 0, &fa.base, &d, NULL);
        if (st == TG_OK) st = tg_test_walk_realise_check(d, plan, recs, res, &fa.base);
        if (d) assert_int_equal(tg_test_opencl_live(d), 0);
        tg_device_close(d);
        assert_int_equal(fa.live_blocks, 0);
        if (!refs_settle(&s->e, s->e.context_refs))
          fail_msg(
              "N=%llu: the engine's reference counts stay at %u (context, was %u), %u "
              "(queue, was %u)",
              (unsigned long long)n, context_refs(&s->e), s->e.context_refs,
              queue_refs(&s->e, s->e.queue), s->e.queue_refs);
        if (fa.failures == 0) break;
        if (st != TG_ERROR_OUT_OF_HOST_MEMORY && st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
          fail_msg("host allocation %llu failed: status %s", (unsigned long long)n,
                   tg_status_name(st));
      }
      print_message("%s queue, %s: host allocation failure injected at %llu points\n",
                    qi ? "out-of-order" : "in-order", tg_mode_name((tg_mode)mode),
                    (unsigned long long)(n - 1));
      tg_plan_destroy(plan);
    }
}

int main(int argc, char **argv) {
  snprintf(g_self, sizeof g_self, "%s", argv[0]);
  {
    char buf[1024];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = '\0';
      snprintf(g_self, sizeof g_self, "%s", buf);
    }
  }
  /* PoCL caches compiled kernels; keep its cache in the build tree, not in $HOME. */
  if (getenv("POCL_CACHE_DIR") == NULL) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/pocl-cache", TG_BINARY_DIR);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) perror(dir);
    setenv("POCL_CACHE_DIR", dir, 1);
  }
  if (argc >= 2 && strcmp(argv[1], "--probe-two-devices") == 0) return run_probe_two_devices();
  /* TG_TEST_FILTER=name runs only the matching tests (cmocka's pattern). */
  if (getenv("TG_TEST_FILTER")) cmocka_set_test_filter(getenv("TG_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, test_setup, test_teardown)
      T(wrap_describes_the_engine_device),
      T(wrong_objects_are_refused),
      T(textures_need_image_support),
      T(models_realise_clean_borrowed),
      T(check_runs_on_the_engine_queue),
      T(device_alloc_failures_roll_back_borrowed),
      T(host_alloc_failures_roll_back_borrowed),
#undef T
  };
  return cmocka_run_group_tests_name("opencl_borrowed", tests, suite_setup, suite_teardown);
}

#else /* the OpenCL backend is not built */

static void opencl_not_built(void **state) {
  (void)state;
  print_message("the OpenCL backend is not built: no borrowed-device tests\n");
  skip();
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(opencl_not_built)};
  return cmocka_run_group_tests_name("opencl_borrowed", tests, NULL, NULL);
}

#endif
