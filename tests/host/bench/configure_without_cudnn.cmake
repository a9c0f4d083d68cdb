# configure_without_cudnn: the project configured as on a machine without cuDNN (CMAKE_DISABLE_FIND_PACKAGE_CUDNN):
# it configures, says what it leaves out, and nothing it builds links cuDNN (the library API, the convgen tool with
# its `bench` that says why it is missing, the Python package). Configure only: building it all again would double
# the test tier's time; that no file outside bench/ and cmd_bench.cpp includes cuDNN is the rest of the argument.
# -D SOURCE_DIR (the project), WORK_DIR, CUDA_ROOT, CXX_COMPILER (this build's).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G Ninja -DCMAKE_BUILD_TYPE=Release
                        -DCMAKE_DISABLE_FIND_PACKAGE_CUDNN=ON -DCONVGEN_BUILD_TESTS=OFF
                        -DCUDAToolkit_ROOT=${CUDA_ROOT} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "configuring without cuDNN failed (exit ${code}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "convgen: cuDNN not found: `convgen bench` \\(the cuDNN baseline\\), its tests and the GPU test tier")
  message(FATAL_ERROR "configuring without cuDNN did not say what it leaves out:\n${out}")
endif()
file(READ ${WORK_DIR}/build.ninja ninja)
foreach(built "build tools/convgen/convgen:" "build libconvgen.a:" "build bench/libconvgen_provenance.a:")
  string(FIND "${ninja}" "${built}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configured without cuDNN, the build has no '${built}'")
  endif()
endforeach()
string(REGEX MATCH "[^\n]*libcudnn[^\n]*" linked "${ninja}")
if(linked)
  message(FATAL_ERROR "configured without cuDNN, the build still links it:\n${linked}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "configured without cuDNN: convgen, libconvgen.a and the provenance library, no cuDNN linked")
