#version 450
#extension GL_GOOGLE_include_directive : require
// Count the texel channels of an image tensor that do not hold its signature. 2D images and 2D
// arrays are both seen through a 2D-array view (a 2D image is one layer); TG_IMAGE_3D selects a
// 3D image, TG_FORMAT the texel format. Texel (x, y, z) is number (z * height + y) * width + x.
#include "signature.glsl"

#if TG_IMAGE_3D
layout(TG_FORMAT, set = 0, binding = 0) uniform readonly image3D tensor;
#else
layout(TG_FORMAT, set = 0, binding = 0) uniform readonly image2DArray tensor;
#endif
layout(std430, set = 1, binding = 0) buffer tg_counter { uint mismatches; } counter;

void main() {
  uint bad = 0u;
  uint plane = params.width * params.height;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += tg_stride()) {
    ivec3 at = ivec3(int(i % params.width), int((i % plane) / params.width), int(i / plane));
    vec4 have = imageLoad(tensor, at);
    for (uint c = 0u; c < 4u; ++c)
      bad += have[c] != tg_signature_texel(params.id, i * 4u + c) ? 1u : 0u;
  }
  if (bad != 0u) atomicAdd(counter.mismatches, bad);
}
