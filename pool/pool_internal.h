/* Internals of run-time pools (pool.c) that a pooled run reaches. Not installed. */
#ifndef TANGRAM_POOL_POOL_INTERNAL_H
#define TANGRAM_POOL_POOL_INTERNAL_H

#include "tangram/backend.h"
#include "tangram/pool.h"

/* Where live allocation `id` is, in the device layer's terms: the driver allocation of its
 * block (the pointer backends/ works with; NULL in a virtual pool) and what that allocation
 * is (a buffer block, or an image). The block stays allocated until a trim finds it unused
 * or the pool is destroyed. TG_ERROR_INVALID_ARGUMENT for an id that is not live. */
tg_status tg__pool_placement(tg_pool *pool, uint64_t id, void **memory, tg_tensor_resource *object);

#endif
