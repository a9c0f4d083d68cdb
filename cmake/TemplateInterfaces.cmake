# TemplateInterfaces: scans every kernel template at build time into the generated C++ side of its interface.
#
# convgen_add_template_interfaces(<target>) runs convgen-template-scan (tools/template_scanner) on each
# templates/*.cu, writing <build>/template_interfaces/<family>_params.hpp and <family>_interface.cpp, plus
# all_interfaces.cpp (template_interfaces()); it adds the .cpp files to <target> and the folder to its include path.
# A template and its declarations that disagree fail the build with the template's file:line:col.
function(convgen_add_template_interfaces target)
  set(source_dir ${PROJECT_SOURCE_DIR}/templates)
  set(out_dir ${PROJECT_BINARY_DIR}/template_interfaces)
  file(GLOB templates CONFIGURE_DEPENDS ${source_dir}/*.cu)
  file(GLOB headers CONFIGURE_DEPENDS ${source_dir}/*.cuh)
  list(SORT templates)
  set(shim ${PROJECT_SOURCE_DIR}/tools/template_scanner/cuda_shim.h)
  set(generated)
  foreach(template ${templates})
    get_filename_component(family ${template} NAME_WE)
    set(outputs ${out_dir}/${family}_params.hpp ${out_dir}/${family}_interface.cpp)
    # The scanner rewrites an output only when its text changes; the stamp tells ninja the scan itself is done.
    add_custom_command(
      OUTPUT ${out_dir}/${family}.stamp
      BYPRODUCTS ${outputs}
      COMMAND convgen-template-scan --source-root ${PROJECT_SOURCE_DIR} -I ${source_dir} --out-dir ${out_dir} ${template}
      COMMAND ${CMAKE_COMMAND} -E touch ${out_dir}/${family}.stamp
      DEPENDS ${template} ${headers} ${shim} convgen-template-scan
      COMMENT "Scanning the interface of templates/${family}.cu"
      VERBATIM)
    list(APPEND generated ${outputs} ${out_dir}/${family}.stamp)
  endforeach()
  add_custom_command(
    OUTPUT ${out_dir}/all_interfaces.stamp
    BYPRODUCTS ${out_dir}/all_interfaces.cpp
    COMMAND convgen-template-scan --registry --out-dir ${out_dir} ${templates}
    COMMAND ${CMAKE_COMMAND} -E touch ${out_dir}/all_interfaces.stamp
    DEPENDS convgen-template-scan
    COMMENT "Listing the scanned templates"
    VERBATIM)
  list(APPEND generated ${out_dir}/all_interfaces.cpp ${out_dir}/all_interfaces.stamp)
  target_sources(${target} PRIVATE ${generated})
  target_include_directories(${target} PUBLIC ${out_dir})
endfunction()
