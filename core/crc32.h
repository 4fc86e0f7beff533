/* CRC-32 (IEEE 802.3, the polynomial of zlib, gzip and PNG), for file checksums. Not installed;
 * not part of the public API. No allocation; no global state. */
#ifndef TANGRAM_CORE_CRC32_H
#define TANGRAM_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of `size` bytes at `data` (zlib's crc32(0, data, size)). */
uint32_t tg__crc32(const void *data, size_t size);

#endif
