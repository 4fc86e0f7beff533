#version 450
#extension GL_GOOGLE_include_directive : require
// Write an image tensor's signature (see image_verify.comp for the addressing).
#include "signature.glsl"

#if TG_IMAGE_3D
layout(TG_FORMAT, set = 0, binding = 0) uniform writeonly image3D tensor;
#else
layout(TG_FORMAT, set = 0, binding = 0) uniform writeonly image2DArray tensor;
#endif

void main() {
  uint plane = params.width * params.height;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += tg_stride()) {
    ivec3 at = ivec3(int(i % params.width), int((i % plane) / params.width), int(i / plane));
    vec4 want = vec4(tg_signature_texel(params.id, i * 4u + 0u),
                     tg_signature_texel(params.id, i * 4u + 1u),
                     tg_signature_texel(params.id, i * 4u + 2u),
                     tg_signature_texel(params.id, i * 4u + 3u));
    imageStore(tensor, at, want);
  }
}
