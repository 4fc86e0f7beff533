#version 450
#extension GL_GOOGLE_include_directive : require
// Write a buffer tensor's signature. The buffer is rounded up to whole words, so the last
// partial word is written whole (its extra bytes are padding the tensor owns).
#include "signature.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer tg_tensor { uint words[]; } tensor;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += tg_stride())
    tensor.words[i] = tg_signature_word(params.id, i);
  if (gl_GlobalInvocationID.x == 0u && params.tail != 0u)
    tensor.words[params.count] = tg_signature_tail(params.id, params.count, params.tail);
}
