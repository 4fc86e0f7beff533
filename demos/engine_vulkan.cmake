# demos/engine_vulkan.c: an engine on its own Vulkan device running a network on Tangram's plans.
# It links the Vulkan loader (as most engines do) and compiles its GLSL shaders with glslc into
# headers of SPIR-V words. Needs the Vulkan backend in the library (tg_device_wrap_vulkan).
find_package(Vulkan QUIET)
find_program(TANGRAM_DEMO_GLSLC NAMES glslc HINTS ${Vulkan_GLSLC_EXECUTABLE})
if(NOT TARGET Vulkan::Vulkan OR NOT TANGRAM_DEMO_GLSLC OR NOT TARGET tangram_vulkan_shaders)
  message(STATUS "Tangram: demo engine_vulkan not built (needs libvulkan, glslc and the Vulkan backend)")
  return()
endif()

set(_tg_engine_src ${CMAKE_CURRENT_SOURCE_DIR}/engine_vulkan)
set(_tg_engine_out ${CMAKE_CURRENT_BINARY_DIR}/engine_vulkan_spv)
file(MAKE_DIRECTORY ${_tg_engine_out})
set(_tg_engine_headers "")
# name, source, defines: each variant becomes <name>.spv.h.
function(_tg_engine_shader name source)
  set(out ${_tg_engine_out}/${name}.spv.h)
  add_custom_command(OUTPUT ${out}
    COMMAND ${TANGRAM_DEMO_GLSLC} --target-env=vulkan1.0 -O -mfmt=c ${ARGN} -I ${_tg_engine_src}
            -o ${out} ${_tg_engine_src}/${source}
    DEPENDS ${_tg_engine_src}/${source} ${_tg_engine_src}/tensor.glsl
    COMMENT "glslc ${source} -> ${name}.spv.h" VERBATIM)
  set(_tg_engine_headers ${_tg_engine_headers} ${out} PARENT_SCOPE)
endfunction()
foreach(kind buffer image)
  if(kind STREQUAL "image")
    set(_im -DTG_IMAGES=1)
  else()
    set(_im -DTG_IMAGES=0)
  endif()
  foreach(op pointwise dwconv reduce concat)
    _tg_engine_shader(${op}_${kind} ${op}.comp ${_im})
  endforeach()
  _tg_engine_shader(load_${kind} io.comp ${_im} -DTG_LOAD=1)
  _tg_engine_shader(store_${kind} io.comp ${_im} -DTG_LOAD=0)
endforeach()

add_executable(demo_engine_vulkan ${CMAKE_CURRENT_SOURCE_DIR}/engine_vulkan.c ${_tg_engine_headers})
set_target_properties(demo_engine_vulkan PROPERTIES OUTPUT_NAME engine_vulkan)
target_include_directories(demo_engine_vulkan PRIVATE ${_tg_engine_out})
target_compile_options(demo_engine_vulkan PRIVATE ${TANGRAM_WARNINGS})
target_link_libraries(demo_engine_vulkan PRIVATE tangram::tangram Vulkan::Vulkan)

if(TANGRAM_BUILD_TESTS)
  # On the Vulkan device of the machine (lavapipe in CI), with validation and synchronization
  # validation: any mismatch or validation message exits 1 and fails; 77 (no device) skips.
  add_test(NAME demo_engine_vulkan COMMAND demo_engine_vulkan --validation)
  set_tests_properties(demo_engine_vulkan PROPERTIES LABELS demos TIMEOUT 300 SKIP_RETURN_CODE 77
    FAIL_REGULAR_EXPRESSION "MISMATCH|validation: ")
endif()
