tangram-profile 1
# tangram probe: bandwidth in GB/s of the speed proxies' logical bytes
backend vulkan
device llvmpipe (LLVM 15.0.6, 256 bits)
precision fp32
dispatch_us 128.774
bandwidth buffer linear 0.0927842
bandwidth buffer neighbourhood 0.326721
bandwidth buffer channel_strided 0.229542
bandwidth texture_2d linear 0.158851
bandwidth texture_2d neighbourhood 0.533285
bandwidth texture_2d channel_strided 0.375889
bandwidth texture_array linear 0.19474
bandwidth texture_array neighbourhood 0.646013
bandwidth texture_array channel_strided 0.343992
bandwidth texture_3d linear 0.14382
bandwidth texture_3d neighbourhood 0.564958
bandwidth texture_3d channel_strided 0.342423
limit max_buffer_bytes 134217728
limit max_image_buffer_texels 134217728
limit max_texture_2d_width 16384
limit max_texture_2d_height 16384
limit max_texture_3d_width 4096
limit max_texture_3d_height 4096
limit max_texture_3d_depth 4096
limit max_texture_array_layers 2048
max_allocation 2147483648
buffer_alignment 64
image_alignment 16
images 1
arena_images 1
end
