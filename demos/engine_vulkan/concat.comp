#version 450
#extension GL_GOOGLE_include_directive : require
// Channel concatenation (and slicing: b_count = 0): output slice s is a's slice
// a_first + s for s < a_count, else b's slice b_first + (s - a_count).
// arg = (a_first, a_count, b_first, unused).
#include "tensor.glsl"

void main() {
  int x, y, s;
  if (!out_element(x, y, s)) return;
  vec4 v = s < p.arg.y ? load_a(x, y, p.arg.x + s) : load_b(x, y, p.arg.z + s - p.arg.y);
  store_out(x, y, s, v);
}
