/* Internal interface shared by the model readers (model/). */
#ifndef TANGRAM_MODEL_INTERNAL_H
#define TANGRAM_MODEL_INTERNAL_H

#include "core/internal.h"
#include "tangram/graph.h"

/* A graph parser (tg_graph_parse_text's shape). */
typedef tg_status (*tg__graph_parse_fn)(const char *data, size_t length, const char *source,
                                        const tg_allocator *alloc, tg_graph **out,
                                        tg_error_info *err);

/* Read `path` whole and parse it with `parse` (the file name is the source in errors): the
 * body of the tg_graph_read_* functions. */
tg_status tg__graph_read_file(const char *path, tg__graph_parse_fn parse, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err);

#endif
