// Shared by every shadow-run shader: the push constants, and the signature pattern, which must
// equal tg_signature_word / tg_signature_texel (backends/backend.c) bit for bit.

layout(local_size_x = 64) in;

layout(push_constant) uniform tg_params {
  uint id;      // signature id: record index + 1
  uint count;   // buffers: whole 32-bit words; images: texels
  uint tail;    // buffers: bytes after the last whole word (0..3)
  uint width;   // images: extent in texels (depth = layers for arrays)
  uint height;
  uint depth;
} params;

uint tg_signature_word(uint id, uint index) {
  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return x;
}

// Integers below 1024: exact in fp16 and fp32.
float tg_signature_texel(uint id, uint index) {
  return float(tg_signature_word(id, index) & 0x3FFu);
}

// Trailing bytes of a buffer whose size is not a multiple of 4: byte j holds the low byte of
// word (count + j), as the host backend writes it.
uint tg_signature_tail(uint id, uint count, uint tail) {
  uint w = 0u;
  for (uint j = 0u; j < tail; ++j) w |= (tg_signature_word(id, count + j) & 0xFFu) << (8u * j);
  return w;
}

// Invocations stride over the whole tensor, so one dispatch of at most 65535 groups covers any
// size.
uint tg_stride() { return gl_NumWorkGroups.x * gl_WorkGroupSize.x; }
