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
bandwidth texture_2d channel_st