# Install: `cmake --install build --prefix P` puts the convgen tool (with the programs and scripts it runs beside
# it), the C++ library libconvgen.a (the API and everything under it, one archive), its public headers
# (include/convgen) and a CMake package, so that an application does
#   find_package(convgen REQUIRED)  # CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE convgen::convgen)
# The library needs no cuDNN (only bench does). Components: `library` (archive, headers, package), `tool` (the
# programs), `python` (the wheel's, pyproject.toml; not in the default install).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# One archive of the API's static libraries (their objects; the consumer links one library).
set(convgen_library_parts convgen_api convgen_tuner convgen_measure convgen_conv convgen_reference convgen_runtime
                          convgen_generator convgen_templates convgen_core convgen_version)
set(convgen_library_objects)
foreach(part ${convgen_library_parts})
  list(APPEND convgen_library_objects $<TARGET_OBJECTS:${part}>)
endforeach()
add_library(convgen_library STATIC ${convgen_library_objects})
set_target_properties(convgen_library PROPERTIES OUTPUT_NAME convgen EXPORT_NAME convgen LINKER_LANGUAGE CXX)
target_include_directories(convgen_library INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(convgen_library INTERFACE cxx_std_20)
# What the archive's objects call: NVRTC, SQLite, the loader (libcuda is opened at run time), threads, OpenMP (the
# reference), and cuda.h's directory for the public header's CUdeviceptr and CUstream.
target_link_libraries(convgen_library INTERFACE CUDA::toolkit CUDA::nvrtc SQLite::SQLite3 OpenMP::OpenMP_CXX
                                                Threads::Threads ${CMAKE_DL_LIBS})

install(TARGETS convgen_library EXPORT convgenTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/convgen DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT library)
install(EXPORT convgenTargets NAMESPACE convgen:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convgen COMPONENT library)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/convgenConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/convgenConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convgen)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/convgenConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/convgenConfig.cmake ${PROJECT_BINARY_DIR}/convgenConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convgen COMPONENT library)

# The tool, and beside it what it runs: the NVRTC worker (its compiles), the template scanner (lint-template), the
# ONNX importer where built, and plot's scripts with the GPU descriptors.
install(TARGETS convgen convgen-nvrtc-worker convgen-template-scan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tool)
if(TARGET convgen-onnx-import)
  install(TARGETS convgen-onnx-import RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tool)
endif()
install(DIRECTORY ${PROJECT_BINARY_DIR}/tools/convgen/convgen-plot DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tool)
