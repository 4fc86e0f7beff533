/* What the shared library exports: the declarations of Tangram's public headers, and nothing
 * else (the library is built with hidden visibility by default). Used by the other headers; a
 * program has no need to include it. */
#ifndef TANGRAM_EXPORT_H
#define TANGRAM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TANGRAM_API_BEGIN _Pragma("GCC visibility push(default)")
#define TANGRAM_API_END _Pragma("GCC visibility pop")
#else
#define TANGRAM_API_BEGIN
#define TANGRAM_API_END
#endif

#endif
