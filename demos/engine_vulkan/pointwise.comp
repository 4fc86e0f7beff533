#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise ops on a and b (unary ops get a twice). SCALE multiplies by b's per-slice value
// (b is [1, 1, 1, C]), as a squeeze-and-excite block does.
#include "tensor.glsl"

#define OP_ADD 0
#define OP_MUL 1
#define OP_MAX 2
#define OP_RELU 3
#define OP_AFFINE 4
#define OP_SCALE 5

void main() {
  int x, y, s;
  if (!out_element(x, y, s)) return;
  vec4 a = load_a(x, y, s);
  vec4 r;
  switch (p.arg.x) {
    case OP_ADD: r = a + load_b(x, y, s); break;
    case OP_MUL: r = a * load_b(x, y, s); break;
    case OP_MAX: r = max(a, load_b(x, y, s)); break;
    case OP_RELU: r = max(a, vec4(0.0)); break;
    case OP_AFFINE: r = a * p.k.x + p.k.y; break;
    default: r = a * load_b(0, 0, s); break;  // OP_SCALE
  }
  store_out(x, y, s, r);
}
