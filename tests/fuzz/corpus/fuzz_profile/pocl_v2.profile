tangram-profile 2
# tangram probe: bandwidth in GB/s of the speed proxies' logical bytes
backend opencl
device pthread-skylake-avx512-AMD EPYC
precision fp32
dispatch_us 1.272
bandwidth buffer linear 5.4249
bandwidth buffer neighbourhood 11.1044
bandwidth buffer channel_strided 9.29344
bandwidth texture_2d linear 2.23236
bandwidth texture_2d neighbourhood 3.38858
bandwidth texture_2d channel_strided 2.81132
bandwidth texture_array linear 1.95221
bandwidth texture_array neighbourhood 2.85102
bandwidth texture_array channel_strided 2.27253
bandwidth texture_3d linear 2.77205
bandwidth texture_3d neighbourhood 3.79041
bandwidth texture_3d channel_strided 3.3371
bandwidth image_buffer linear 3.434
bandwidth image_buffer neighbourhood 6.86664
bandwidth image_buffer channel_strided 5.87311
limit max_buffer_bytes 2147483648
limit max_image_buffer_texels 134217728
limit max_texture_2d_width 8192
limit max_texture_2d_height 8192
limit max_texture_3d_width 2048
limit max_texture_3d_height 2048
limit max_texture_3d_depth 2048
limit max_texture_array_layers 2048
max_allocation 2147483648
buffer_alignment 128
image_alignment 128
images 1
arena_images 0
end
