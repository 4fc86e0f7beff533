#version 450
#extension GL_GOOGLE_include_directive : require
// Count the words of a buffer tensor that do not hold its signature.
#include "signature.glsl"

layout(std430, set = 0, binding = 0) readonly buffer tg_tensor { uint words[]; } tensor;
// This access's own counter (a dynamic offset picks the slot): concurrent ops never share one.
layout(std430, set = 1, binding = 0) buffer tg_counter { uint mismatches; } counter;

void main() {
  uint bad = 0u;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += tg_stride())
    bad += tensor.words[i] != tg_signature_word(params.id, i) ? 1u : 0u;
  if (gl_GlobalInvocationID.x == 0u && params.tail != 0u) {
    uint have = tensor.words[params.count];
    uint want = tg_signature_tail(params.id, params.count, params.tail);
    for (uint j = 0u; j < params.tail; ++j)
      bad += ((have >> (8u * j)) & 0xFFu) != ((want >> (8u * j)) & 0xFFu) ? 1u : 0u;
  }
  if (bad != 0u) atomicAdd(counter.mismatches, bad);
}
