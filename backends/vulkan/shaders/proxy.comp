#version 450
// A memory-access proxy of one op (tangram/speed.h, backends/speed.c): each invocation is one
// output texel L in [lo, hi) (texel (x, y, z) is L = (z*h + y)*w + x); it reads the inputs in
// the pattern of the op class and writes the output record's signature (what the shadow run
// verifies), with the sum of its reads masked out by `mix` (0 at run time, so every read
// stays). TG_OUT / TG_IN pick the operands' kinds: 0 buffer, 1 2D array view (a 2D image is
// one layer; `stacked` then puts slice z at rows z*h), 2 3D image. TG_FORMAT: the images'
// texel format; TG_HALF: buffers hold fp16 texels (8 bytes) instead of fp32 (16).
layout(local_size_x = 64) in;

layout(push_constant) uniform tg_proxy_params {
  ivec4 og;   // output: w, h, slices, stacked
  ivec4 ag;   // input a
  ivec4 bg;   // input b
  int nin, cls, k, pad;
  uint lo, hi, id, mix;
} p;

#if TG_OUT == 0
layout(std430, set = 0, binding = 0) writeonly buffer tg_out { uint words[]; } o;
#elif TG_OUT == 1
layout(TG_FORMAT, set = 0, binding = 0) uniform writeonly image2DArray o;
#else
layout(TG_FORMAT, set = 0, binding = 0) uniform writeonly image3D o;
#endif
#if TG_IN == 0
layout(std430, set = 1, binding = 0) readonly buffer tg_in_a { uint words[]; } a;
layout(std430, set = 2, binding = 0) readonly buffer tg_in_b { uint words[]; } b;
#elif TG_IN == 1
layout(TG_FORMAT, set = 1, binding = 0) uniform readonly image2DArray a;
layout(TG_FORMAT, set = 2, binding = 0) uniform readonly image2DArray b;
#else
layout(TG_FORMAT, set = 1, binding = 0) uniform readonly image3D a;
layout(TG_FORMAT, set = 2, binding = 0) uniform readonly image3D b;
#endif

uint tg_sig(uint id, uint index) {
  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return x;
}

ivec3 tg_coord(ivec4 g, int x, int y, int z) {
  return g.w != 0 ? ivec3(x, z * g.y + y, 0) : ivec3(x, y, z);
}

#if TG_IN == 0
#if TG_HALF
#define TG_BLOAD(t, i) vec4(unpackHalf2x16(t.words[2u * uint(i)]), unpackHalf2x16(t.words[2u * uint(i) + 1u]))
#else
#define TG_BLOAD(t, i) uintBitsToFloat(uvec4(t.words[4u * uint(i)], t.words[4u * uint(i) + 1u], \
                                             t.words[4u * uint(i) + 2u], t.words[4u * uint(i) + 3u]))
#endif
vec4 tg_load_a(ivec4 g, int x, int y, int z) { return TG_BLOAD(a, (z * g.y + y) * g.x + x); }
vec4 tg_load_b(ivec4 g, int x, int y, int z) { return TG_BLOAD(b, (z * g.y + y) * g.x + x); }
#else
vec4 tg_load_a(ivec4 g, int x, int y, int z) { return imageLoad(a, tg_coord(g, x, y, z)); }
vec4 tg_load_b(ivec4 g, int x, int y, int z) { return imageLoad(b, tg_coord(g, x, y, z)); }
#endif

// Sizes below 65536 texels a side: the products fit 32 bits.
int tg_scale(int v, int from, int to) { return int((uint(v) * uint(to)) / uint(max(from, 1))); }

// The reads of one input (`second` picks b) for output texel (x, y, z) = L.
#define TG_READ(LOAD, g)                                                                     \
  {                                                                                          \
    int cx = min(tg_scale(x, p.og.x, g.x), g.x - 1), cy = min(tg_scale(y, p.og.y, g.y), g.y - 1); \
    int cz = min(z, g.z - 1);                                                                \
    if (p.cls == 0) {                                                                        \
      acc += LOAD(g, min(x, g.x - 1), min(y, g.y - 1), cz);                                  \
    } else if (p.cls == 1) {                                                                 \
      int r = p.k / 2;                                                                       \
      for (int dy = -r; dy <= r; ++dy)                                                       \
        for (int dx = -r; dx <= r; ++dx)                                                     \
          acc += LOAD(g, clamp(cx + dx, 0, g.x - 1), clamp(cy + dy, 0, g.y - 1), cz);        \
    } else if (p.cls == 2) {                                                                 \
      for (int c = 0; c < g.z; ++c) acc += LOAD(g, cx, cy, c);                               \
    } else if (p.cls == 3) {                                                                 \
      int x1 = max(tg_scale(x + 1, p.og.x, g.x), cx + 1), y1 = max(tg_scale(y + 1, p.og.y, g.y), cy + 1); \
      for (int yy = cy; yy < min(y1, g.y); ++yy)                                             \
        for (int xx = cx; xx < min(x1, g.x); ++xx) acc += LOAD(g, xx, yy, cz);               \
    } else {                                                                                 \
      uint n = uint(g.x) * uint(g.y) * uint(g.z);                                            \
      uint S = min(uint(float(L - p.lo) * (float(n) / float(p.hi - p.lo))), n - 1u);         \
      int sx = int(S % uint(g.x)), sy = int((S / uint(g.x)) % uint(g.y));                    \
      int sz = int(S / (uint(g.x) * uint(g.y)));                                             \
      acc += LOAD(g, sx, sy, sz);                                                            \
    }                                                                                        \
  }

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint L = p.lo + gl_GlobalInvocationID.x; L < p.hi; L += stride) {
    int x = int(L % uint(p.og.x)), y = int((L / uint(p.og.x)) % uint(p.og.y));
    int z = int(L / (uint(p.og.x) * uint(p.og.y)));
    vec4 acc = vec4(0.0);
    if (p.nin > 0) TG_READ(tg_load_a, p.ag)
    if (p.nin > 1) TG_READ(tg_load_b, p.bg)
#if TG_OUT == 0
#if TG_HALF
    uvec2 bits = uvec2(packHalf2x16(acc.xy), packHalf2x16(acc.zw)) & uvec2(p.mix);
    o.words[2u * L] = tg_sig(p.id, 2u * L) ^ bits.x;
    o.words[2u * L + 1u] = tg_sig(p.id, 2u * L + 1u) ^ bits.y;
#else
    uvec4 bits = floatBitsToUint(acc) & uvec4(p.mix);
    for (uint j = 0u; j < 4u; ++j) o.words[4u * L + j] = tg_sig(p.id, 4u * L + j) ^ bits[j];
#endif
#else
    vec4 v = vec4(float(tg_sig(p.id, 4u * L) & 0x3FFu), float(tg_sig(p.id, 4u * L + 1u) & 0x3FFu),
                  float(tg_sig(p.id, 4u * L + 2u) & 0x3FFu), float(tg_sig(p.id, 4u * L + 3u) & 0x3FFu));
    imageStore(o, tg_coord(p.og, x, y, z), p.mix != 0u ? v + acc : v);
#endif
  }
}
