# The .onnx reader decodes ModelProto with protobuf-c, from C code that protoc-c generates at
# build time out of ONNX's onnx.proto as Debian ships it (libonnx-dev: /usr/include/onnx/).
#   TANGRAM_ONNX=ON   (default) needs protoc-c (host), protobuf-c (target) and onnx.proto
#   TANGRAM_ONNX=OFF  the reader answers TG_ERROR_UNSUPPORTED
# tangram_use_onnx(TARGET) gives TARGET the generated decoder, its header and the library.
set(TANGRAM_ONNX_GEN_DIR ${PROJECT_BINARY_DIR}/generated/onnx)
if(TANGRAM_ONNX)
  find_program(TANGRAM_PROTOC_C protoc-c)
  find_path(TANGRAM_PROTOBUF_C_INCLUDE_DIR protobuf-c/protobuf-c.h)
  find_library(TANGRAM_PROTOBUF_C_LIBRARY protobuf-c)
  find_file(TANGRAM_ONNX_PROTO onnx.proto PATH_SUFFIXES onnx)
  foreach(v TANGRAM_PROTOC_C TANGRAM_PROTOBUF_C_INCLUDE_DIR TANGRAM_PROTOBUF_C_LIBRARY TANGRAM_ONNX_PROTO)
    if(NOT ${v})
      message(FATAL_ERROR "${v} not found: install protobuf-c-compiler, libprotobuf-c-dev and "
                          "libonnx-dev (scripts/setup.sh), or configure with -DTANGRAM_ONNX=OFF")
    endif()
  endforeach()
  get_filename_component(_tg_onnx_proto_dir ${TANGRAM_ONNX_PROTO} DIRECTORY)
  file(MAKE_DIRECTORY ${TANGRAM_ONNX_GEN_DIR})
  add_custom_command(
    OUTPUT ${TANGRAM_ONNX_GEN_DIR}/onnx.pb-c.c ${TANGRAM_ONNX_GEN_DIR}/onnx.pb-c.h
    COMMAND ${TANGRAM_PROTOC_C} -I${_tg_onnx_proto_dir} --c_out=${TANGRAM_ONNX_GEN_DIR} ${TANGRAM_ONNX_PROTO}
    DEPENDS ${TANGRAM_ONNX_PROTO}
    COMMENT "protoc-c: ONNX's onnx.proto -> C")
  # Generated code is compiled without the project's warning flags (another protoc-c may emit
  # code a newer compiler warns about); it holds descriptor tables, no logic of Tangram's.
  add_library(tangram_onnx_proto OBJECT ${TANGRAM_ONNX_GEN_DIR}/onnx.pb-c.c)
  target_include_directories(tangram_onnx_proto PUBLIC ${TANGRAM_ONNX_GEN_DIR} ${TANGRAM_PROTOBUF_C_INCLUDE_DIR})
  set_target_properties(tangram_onnx_proto PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()

function(tangram_use_onnx target)
  if(TANGRAM_ONNX)
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:tangram_onnx_proto>)
    target_include_directories(${target} PRIVATE ${TANGRAM_ONNX_GEN_DIR} ${TANGRAM_PROTOBUF_C_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE TANGRAM_HAVE_ONNX=1)
    add_dependencies(${target} tangram_onnx_proto)
    target_link_libraries(${target} PUBLIC $<BUILD_INTERFACE:${TANGRAM_PROTOBUF_C_LIBRARY}>
                          $<INSTALL_INTERFACE:protobuf-c>)
  endif()
endfunction()

# pkg-config: static consumers link protobuf-c too.
if(TANGRAM_ONNX)
  set(TANGRAM_PC_ONNX_LIBS " -lprotobuf-c")
else()
  set(TANGRAM_PC_ONNX_LIBS "")
endif()
