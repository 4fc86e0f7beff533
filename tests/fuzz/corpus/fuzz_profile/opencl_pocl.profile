tangram-profile 1
# tangram probe: bandwidth in GB/s of the speed proxies' logical bytes
backend opencl
device pthread-skylake-avx512-AMD EPYC
precision fp32
dispatch_us 1.031
bandwidth buffer linear 3.41589
bandwidth buffer neighbourhood 7.40951
bandwidth buffer channel_strided 7.45545
bandwidth texture_2d linear 0.631806
bandwidth texture_2d neighbourhood 0.958669
bandwidth texture_2d channel_strided 0.867878
bandwidth texture_array linear 0.569247
bandwidth texture_array neighbourhood 0.810907
bandwidth texture_array channel_strided 0.751437
bandwidth texture_3d linear 0.66873
bandwidth texture_3d neighbourhood 0.96561
bandwidth texture_3d channel_strided 0.822511
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
