/* Small .onnx models for the range tests (tests/model, tests/tools, tests/fuzz), written with
 * onnx_builder.h. */
#ifndef TG_RANGE_MODELS_H
#define TG_RANGE_MODELS_H

/* Each file uses some of these helpers (and of onnx_builder.h's). */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "onnx_builder.h"

/* x[N,4,W] -> Conv(8, k3) 'conv1' -> c -> Relu 'relu' -> r -> Conv(8, k3, stride 2) 'conv2' -> y.
 * N is `batch` (-1: dynamic, named "d0"); W is dynamic ("d2"). */
static void tg_test_conv1d_onnx(pb *model, int64_t batch) {
  pb graph = {0};
  int64_t xd[3] = {batch, 4, -1}, yd[3] = {batch, 8, -1};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 3, xd);
  int64_t wd[3] = {8, 4, 3}, w2d[3] = {8, 8, 3};
  ob_initializer(&graph, "w", OB_FLOAT, 3, wd, NULL, 8 * 4 * 3);
  ob_initializer(&graph, "w2", OB_FLOAT, 3, w2d, NULL, 8 * 8 * 3);
  const char *c1_in[2] = {"x", "w"}, *c1_out[1] = {"c"};
  ob_node(&graph, "Conv", "conv1", c1_in, 2, c1_out, 1, NULL);
  const char *r_in[1] = {"c"}, *r_out[1] = {"r"};
  ob_node(&graph, "Relu", "relu", r_in, 1, r_out, 1, NULL);
  pb a = {0};
  int64_t two = 2;
  ob_attr_ints(&a, "strides", &two, 1);
  const char *c2_in[2] = {"r", "w2"}, *c2_out[1] = {"y"};
  ob_node(&graph, "Conv", "conv2", c2_in, 2, c2_out, 1, &a);
  ob_value_info(&graph, 12, "y", OB_FLOAT, 3, yd);
  ob_model(model, &graph, 13);
}

/* x[N,3,H,W] (all three dynamic) -> Relu -> y. */
static void tg_test_nchw_relu_onnx(pb *model) {
  pb graph = {0};
  int64_t xd[4] = {-1, 3, -1, -1};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 4, xd);
  const char *in[1] = {"x"}, *out[1] = {"y"};
  ob_node(&graph, "Relu", "relu", in, 1, out, 1, NULL);
  ob_value_info(&graph, 12, "y", OB_FLOAT, 4, xd);
  ob_model(model, &graph, 13);
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
