# consumer_test: `cmake --install` into a fresh prefix, then a tiny application configured against it with
# find_package(convgen), built and run: it prints the problem's key, then a kernel (GPU) or "no CUDA device" (exit 2).
# -D BUILD_DIR, SOURCE_DIR (the consumer), WORK_DIR, CUDA_ROOT, CXX_COMPILER (this build's) and LINK_FLAGS (the
# sanitizer runtimes of a sanitized build, else empty).
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(code ${code} PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  if(NOT code EQUAL 0 AND NOT code EQUAL 2)
    message(FATAL_ERROR "${ARGN}: exit ${code}\n${out}\n${err}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
foreach(installed bin/convgen bin/convgen-plot/plot.py lib/libconvgen.a include/convgen/convgen.hpp
                  lib/cmake/convgen/convgenConfig.cmake)
  if(NOT EXISTS ${WORK_DIR}/prefix/${installed})
    message(FATAL_ERROR "cmake --install put no ${installed} in the prefix")
  endif()
endforeach()
if(EXISTS ${WORK_DIR}/prefix/convgen)
  message(FATAL_ERROR "the default install holds the Python extension (its component is the wheel's)")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCUDAToolkit_ROOT=${CUDA_ROOT} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(NOT out MATCHES "^n1_c8_k8_i1x12x12_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32\n")
  message(FATAL_ERROR "the consumer printed:\n${out}")
endif()
if(code EQUAL 2 AND NOT out MATCHES "no CUDA device")
  message(FATAL_ERROR "the consumer exited 2 without saying there is no device:\n${out}")
endif()
message(STATUS "consumer ran (exit ${code}):\n${out}")
