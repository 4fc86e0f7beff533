#version 450
#extension GL_GOOGLE_include_directive : require
// 3x3 depthwise convolution, stride 1, zero padding. The weights are a fixed function of
// (channel, tap) so that the demo needs no weight upload.
#include "tensor.glsl"

void main() {
  int x, y, s;
  if (!out_element(x, y, s)) return;
  vec4 sum = vec4(0.0);
  for (int ky = -1; ky <= 1; ++ky)
    for (int kx = -1; kx <= 1; ++kx) {
      int sx = x + kx, sy = y + ky;
      if (sx < 0 || sy < 0 || sx >= p.a_shape.x || sy >= p.a_shape.y) continue;
      int tap = (ky + 1) * 3 + (kx + 1);
      ivec4 c = ivec4(4 * s) + ivec4(0, 1, 2, 3);
      vec4 w = vec4((c * 9 + tap) % 7 - 3) * 0.125;
      sum += w * load_a(sx, sy, s);
    }
  store_out(x, y, s, sum);
}
