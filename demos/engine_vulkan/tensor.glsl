// The demo engine's tensor layout, shared by its shaders. A tensor of shape [1, H, W, C] is a
// grid of W x H x S vec4 (S = C/4 slices of 4 channels), as Tangram's records describe it:
// on buffers element (s*H + y)*W + x, on 2D images texel (x, s*H + y) (texture_2d).
// Compiled twice: TG_IMAGES=0 (storage buffers) and TG_IMAGES=1 (rgba32f storage images).

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(push_constant) uniform Params {
  ivec4 out_shape;  // W, H, S of the output
  ivec4 a_shape;    // of input a
  ivec4 b_shape;    // of input b
  ivec4 arg;        // op code (pointwise), slice offsets and counts (concat)
  vec4 k;           // constants (affine: scale, bias)
} p;

#if TG_IMAGES
layout(set = 0, binding = 0, rgba32f) uniform readonly image2D in_a;
layout(set = 0, binding = 1, rgba32f) uniform readonly image2D in_b;
layout(set = 0, binding = 2, rgba32f) uniform writeonly image2D out_t;
vec4 load_a(int x, int y, int s) { return imageLoad(in_a, ivec2(x, s * p.a_shape.y + y)); }
vec4 load_b(int x, int y, int s) { return imageLoad(in_b, ivec2(x, s * p.b_shape.y + y)); }
void store_out(int x, int y, int s, vec4 v) { imageStore(out_t, ivec2(x, s * p.out_shape.y + y), v); }
#else
layout(std430, set = 0, binding = 0) readonly buffer A { vec4 a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { vec4 b_data[]; };
layout(std430, set = 0, binding = 2) writeonly buffer O { vec4 out_data[]; };
vec4 load_a(int x, int y, int s) { return a_data[(s * p.a_shape.y + y) * p.a_shape.x + x]; }
vec4 load_b(int x, int y, int s) { return b_data[(s * p.b_shape.y + y) * p.b_shape.x + x]; }
void store_out(int x, int y, int s, vec4 v) { out_data[(s * p.out_shape.y + y) * p.out_shape.x + x] = v; }
#endif

// The engine's own input and output tensors: host-visible buffers in the same layout.
layout(std430, set = 0, binding = 3) buffer IO { vec4 io_data[]; };

// This invocation's output element; false when outside the output.
bool out_element(out int x, out int y, out int s) {
  x = int(gl_GlobalInvocationID.x);
  y = int(gl_GlobalInvocationID.y);
  s = int(gl_GlobalInvocationID.z);
  return x < p.out_shape.x && y < p.out_shape.y && s < p.out_shape.z;
}
