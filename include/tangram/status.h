/* Tangram status codes: one enum with stable values, and its names. */
#ifndef TANGRAM_STATUS_H
#define TANGRAM_STATUS_H

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* X(name, value, description). Values are pinned: never renumber, only append. */
#define TG_STATUS_LIST(X)                                                      \
  X(TG_OK, 0, "ok")                                                            \
  X(TG_ERROR_INVALID_ARGUMENT, 1, "invalid argument")                          \
  X(TG_ERROR_OUT_OF_HOST_MEMORY, 2, "out of host memory")                      \
  X(TG_ERROR_OVERFLOW, 3, "arithmetic overflow")                               \
  X(TG_ERROR_PARSE, 4, "malformed input")                                      \
  X(TG_ERROR_IO, 5, "input/output error")                                      \
  X(TG_ERROR_UNSUPPORTED, 6, "unsupported")                                    \
  X(TG_ERROR_GRAPH, 7, "invalid graph (cycle or read before write)")          \
  X(TG_ERROR_INVALID_PLAN, 8, "plan is invalid")                               \
  X(TG_ERROR_BUDGET, 9, "does not fit the memory budget")                      \
  X(TG_ERROR_NO_LOADER, 10, "driver loader library not found")                 \
  X(TG_ERROR_NO_DEVICE, 11, "no suitable device")                              \
  X(TG_ERROR_OUT_OF_DEVICE_MEMORY, 12, "out of device memory")                 \
  X(TG_ERROR_DEVICE, 13, "device call failed")                                 \
  X(TG_ERROR_LIMIT, 14, "exceeds a device limit")                              \
  X(TG_ERROR_CORRUPTION, 15, "on-device check found corrupted tensors")        \
  X(TG_ERROR_TIMEOUT, 16, "time limit reached")                                \
  X(TG_ERROR_INTERNAL, 17, "internal error")                                  \
  X(TG_ERROR_POOL_CAPACITY, 18, "pool capacity exceeded")

typedef enum tg_status {
#define TG_STATUS_ENUM_(name, value, text) name = value,
  TG_STATUS_LIST(TG_STATUS_ENUM_)
#undef TG_STATUS_ENUM_
} tg_status;

/* Human-readable description of a status ("unknown status" for values not in the list).
 * Returns a static string; never NULL. */
const char *tg_status_string(tg_status status);

/* The enumerator's name, e.g. "TG_ERROR_PARSE" ("TG_UNKNOWN" for unknown values). Never NULL. */
const char *tg_status_name(tg_status status);

/* Where an error happened and why, in words a user can act on ("model.csv:12: size is negative").
 * Functions that take a `tg_error_info *` fill it on failure when it is not NULL; on success they
 * leave it untouched. */
#define TG_ERROR_MESSAGE_MAX 512
typedef struct tg_error_info {
  char message[TG_ERROR_MESSAGE_MAX];
} tg_error_info;

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
