/* Caller-supplied host memory allocation, and a fault-injecting wrapper for tests. */
#ifndef TANGRAM_ALLOCATOR_H
#define TANGRAM_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Host allocator. Every function that allocates takes `const tg_allocator *`; NULL means
 * tg_allocator_default(). `alloc` returns memory aligned for any C object, or NULL.
 * `realloc` may be NULL (Tangram then allocates, copies `old_size` bytes and frees).
 * `free(user, NULL)` must be a no-op. */
typedef struct tg_allocator {
  void *(*alloc)(void *user, size_t size);
  void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
  void (*free)(void *user, void *ptr);
  void *user;
} tg_allocator;

/* The malloc/realloc/free allocator. Returns a pointer to a constant; never NULL. */
const tg_allocator *tg_allocator_default(void);

/* A wrapper that makes the `fail_at`-th allocation (1-based; 0 = never) fail, counts
 * allocations and tracks how many blocks are live. Lives in caller memory; not thread-safe
 * (use one per thread). Initialise with tg_failing_allocator_init and pass `&fa->base`. */
typedef struct tg_failing_allocator {
  tg_allocator base;           /* pass this to Tangram */
  const tg_allocator *inner;   /* where memory really comes from */
  uint64_t fail_at;            /* 1-based index of the allocation to fail; 0 = none */
  uint64_t allocations;        /* allocation attempts so far (alloc and growing realloc) */
  uint64_t failures;           /* how many were failed on purpose */
  int64_t live_blocks;         /* blocks allocated and not yet freed */
} tg_failing_allocator;

/* Initialise `fa` to wrap `inner` (NULL = default). Returns nothing: it cannot fail. */
void tg_failing_allocator_init(tg_failing_allocator *fa, const tg_allocator *inner,
                               uint64_t fail_at);

/* Reads TANGRAM_FAIL_HOST_ALLOC_AT from the environment: its value (a positive decimal), or 0
 * when unset or not a number. Pure read; no state. */
uint64_t tg_fail_host_alloc_at_from_env(void);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
