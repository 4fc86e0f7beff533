/* Loading what the CLI plans: a usage-record CSV, or a model (.tflite / text graph) turned
 * into usage records for one storage type, with its schedule for reuse policies. */
#ifndef TANGRAM_TOOLS_INPUT_H
#define TANGRAM_TOOLS_INPUT_H

#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/order.h"
#include "tangram/schedule.h"
#include "tools/cli.h"

typedef struct tg_cli_input {
  tg_model *model;
  tg_lifetimes *lifetimes;            /* models only */
  tg_model_records *model_records;    /* models only */
  tg_schedule *schedule;              /* models only */
  const tg_record_set *records;       /* what to plan (model_records->records or the CSV) */
  const uint32_t *tensor_of;          /* models only: record -> tensor */
  const tg_graph *graph;              /* models only: the graph planned (reordered with reorder) */
  tg_graph *reordered;                /* reorder only: the graph in the searched op order */
  tg_op_order *order;                 /* reorder only: the order and its gain */
  tg_in_place_pair *in_place;         /* models only: the in-place candidates of `records`
                                         (tg_model_in_place_pairs, images allowed) */
  size_t in_place_count;
  const tg_allocator *alloc;
} tg_cli_input;

/* --input-shape NAME:DxDx... (repeatable): the shapes of a model's dynamic inputs. */
#define TG_CLI_MAX_INPUT_SHAPES 16
#define TG_CLI_INPUT_NAME_MAX 256
typedef struct tg_cli_model_options {
  tg_input_shape shapes[TG_CLI_MAX_INPUT_SHAPES];
  char names[TG_CLI_MAX_INPUT_SHAPES][TG_CLI_INPUT_NAME_MAX];
  tg_model_options options;           /* what the readers take: points at shapes */
  int ranges;                         /* set by a command that takes ranges (LO..HI[/STEP]) */
} tg_cli_model_options;

/* If argv[*i] is --input-shape (value next or after '='): parse NAME:DxDx... with
 * tg_input_shape_parse into `o`, advance *i, return 1. Print an error and return -1 when the
 * value is malformed, names an input twice, or holds a range and `o->ranges` is 0 (the command
 * takes one size); 0 when argv[*i] is another argument. `o` must be zeroed before the first
 * call (then `ranges` set by commands that take ranges). */
int tg_cli_input_shape_option(int argc, char **argv, int *i, tg_cli_model_options *o);

/* 1 when an input shape of `options` (NULL: none) gives a dimension as a range (LO..HI[/STEP]),
 * else 0. */
int tg_cli_range_given(const tg_model_options *options);

/* The --input-shape help line, for every subcommand's usage text (_RANGE: for a command that
 * takes ranges, which says what it does with one after it). */
#define TG_CLI_INPUT_SHAPE_RANGE_HELP                                                         \
  "  --input-shape NAME:DxDx...  models with dynamic input dimensions: the shape of input\n"    \
  "                           NAME, e.g. x:1x3x640x640 (repeatable, one per input). One or two\n" \
  "                           dynamic dimensions may be a range LO..HI or LO..HI/STEP, e.g.\n"   \
  "                           x:1x3x48x32..1600/8 or x:1x3x32..960/32x32..960/32\n"
#define TG_CLI_INPUT_SHAPE_HELP                                                               \
  TG_CLI_INPUT_SHAPE_RANGE_HELP                                                               \
  "                           tangram inputs MODEL --input-shape ... lists the records at\n"    \
  "                           every size; this command answers 'ranges: not supported by\n"    \
  "                           this command yet'\n"

/* tg_model_load_with for the CLI. On failure, when an input of the file needs a size
 * (tg_model_list_inputs), the --input-shape to give is appended to `err`'s message. On
 * success, unless `quiet`, one line on stderr per graph input planned at the size its file
 * records (TG_TENSOR_ASSUMED_SHAPE). */
tg_status tg_cli_model_load(const char *path, const tg_model_options *options, const tg_allocator *alloc,
                            int quiet, tg_model **out, tg_error_info *err);

/* `,"assumed_input_shapes":[{"name":..,"shape":[..],"dynamic":[..]},...]` for `graph` (an
 * empty list when no input took the file's size; nothing for NULL). */
void tg_cli_json_assumed_inputs(tg__strbuf *b, const tg_graph *graph);

/* "1x3x?x?" for a listed input ("?" where the file records no size; "DxDx..." with no shape). */
void tg_cli_input_shape_text(const tg_model_input *in, char *buf, size_t size);

typedef struct tg_cli_input_options {
  tg_storage storage;
  tg_precision precision;
  int plan_io;
  const tg_device_limits *limits;     /* NULL: tg_device_limits_default() */
  const tg_model_options *model;      /* input shapes; NULL: none */
  int quiet;                          /* no note on stderr for inputs planned at the file's size */
  int chain;                          /* tensors that do not fit fall along the chain
                                       * (tg_model_records_create_chain); 0: straight to buffers */
} tg_cli_input_options;

/* Load `path`. On failure prints nothing; `err` says why; `*in` is left empty. */
tg_status tg_cli_input_load(const char *path, const tg_cli_input_options *options,
                            const tg_allocator *alloc, tg_cli_input *in, tg_error_info *err);
void tg_cli_input_free(tg_cli_input *in);

/* After tg_cli_input_load with the same `options`: search an op order with a smaller peak-live
 * bound on the primary records (tg_op_order_compute with `order_options`), then rebuild the
 * lifetimes, records and schedule on the reordered graph, which `in->graph` then points to.
 * Usage-record CSVs have no graph: TG_ERROR_INVALID_ARGUMENT. On failure `in` is freed. */
tg_status tg_cli_input_reorder(tg_cli_input *in, const tg_cli_input_options *options,
                               const tg_order_options *order_options, tg_error_info *err);

/* `plan`'s report of an op order search: `,"reorder":{...}` (op indices elsewhere in the document
 * are those of the reordered graph; op_order[k] is the model's op that runs k-th), or one line of
 * text in `unit`. */
void tg_cli_json_reorder(tg__strbuf *b, const tg_op_order *o);
void tg_cli_text_reorder(tg__strbuf *b, const tg_op_order *o, const char *unit);

/* Per tensor of `graph`, the volume of its primary record in `records` (0 for tensors without
 * one): the sizes tg_op_order_compute takes. `*sizes` is allocated from `alloc`. */
tg_status tg_cli_record_sizes(const tg_graph *graph, const tg_model_records *records,
                               const tg_allocator *alloc, uint64_t **sizes);

/* The relation for `policy` over the input's records (NULL for serial). Models only: CSV
 * inputs have no graph, so only `serial` is possible there (TG_ERROR_INVALID_ARGUMENT). */
tg_status tg_cli_input_relation(const tg_cli_input *in, tg_policy policy,
                                tg_policy_relation **out, tg_error_info *err);

/* The first non-empty fallback group of `records` in chain order and its storage (`*to`, when
 * non-NULL); NULL when no tensor falls back. */
const tg_model_fallback *tg_cli_first_fallback(const tg_model_records *records, tg_storage *to);

/* JSON: ,"fallback_tensors":N,"fallbacks":[{"tensor":..,"storage":..,"reason":..},..],
 * "fallback_storages":{"texture_2d":n,..} over every group (chain order). */
void tg_cli_json_fallbacks(tg__strbuf *b, const tg_model_records *records);

/* The relations of `policy` over the input's primary records and each fallback group's
 * (tg_model_relations_create; all NULL for serial). Usage-record CSVs have no graph: only
 * `serial` (TG_ERROR_INVALID_ARGUMENT otherwise). Free with tg_model_relations_clear. */
tg_status tg_cli_input_relations(const tg_cli_input *in, tg_policy policy, tg_model_relations *out,
                                 tg_error_info *err);

/* The in-place pairs the input's model allows for its storage on a device whose kernels may
 * (`read_write_images` nonzero) or may not read and write one image (tg_model_in_place_pairs),
 * of them those whose input and output have one size in `planned` (the input's records, or
 * the device's arena records of them: one allocation holds both). Usage records: none.
 * `*pairs` is allocated from the input's allocator (NULL when `*count` is 0). */
tg_status tg_cli_device_pairs(const tg_cli_input *in, int read_write_images, const tg_record_set *planned,
                              tg_in_place_pair **pairs, size_t *count);

/* Per record of `set`, what the backend creates: a buffer of the record's bytes (1D sets) or
 * an image of its extent in `storage` with `precision`'s texels. `*out` is allocated from
 * `alloc` (count entries, at least one); TG_ERROR_OVERFLOW when an image's bytes overflow. */
tg_status tg_cli_resources(const tg_record_set *set, tg_storage storage, tg_precision precision,
                           const tg_allocator *alloc, tg_tensor_resource **out);

#endif
