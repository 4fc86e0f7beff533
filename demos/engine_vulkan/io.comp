#version 450
#extension GL_GOOGLE_include_directive : require
// The engine's input and output: TG_LOAD=1 copies the host-visible input buffer (binding 3)
// into a tensor, TG_LOAD=0 copies a tensor into a host-visible output buffer.
#include "tensor.glsl"

void main() {
  int x, y, s;
  if (!out_element(x, y, s)) return;
  int i = (s * p.out_shape.y + y) * p.out_shape.x + x;
#if TG_LOAD
  store_out(x, y, s, io_data[i]);
#else
  io_data[i] = load_a(x, y, s);
#endif
}
