#version 450
#extension GL_GOOGLE_include_directive : require
// Mean over height and width: [1, H, W, C] -> [1, 1, 1, C]; one invocation per slice.
#include "tensor.glsl"

void main() {
  int x, y, s;
  if (!out_element(x, y, s)) return;
  vec4 sum = vec4(0.0);
  for (int iy = 0; iy < p.a_shape.y; ++iy)
    for (int ix = 0; ix < p.a_shape.x; ++ix) sum += load_a(ix, iy, s);
  store_out(0, 0, s, sum / float(p.a_shape.x * p.a_shape.y));
}
