# EmbedTemplates: turns the kernel templates into a C++ source holding their text, so installed binaries need no template files.
#
# convgen_embed_templates(OUTPUT <file.cpp> FILES <abs paths...> [FUNCTION <name>]) writes a
# translation unit defining convgen::<name>() (default embedded_templates), a list of
# {file name, text} pairs (generator/embedded_templates.hpp's EmbeddedTemplate). The text is split
# into raw-string chunks to stay under compilers' string-literal limits.
function(convgen_embed_templates)
  cmake_parse_arguments(ARG "" "OUTPUT;FUNCTION" "FILES" ${ARGN})
  if(NOT ARG_FUNCTION)
    set(ARG_FUNCTION embedded_templates)
  endif()
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} "-DFILES=${ARG_FILES}" -DFUNCTION=${ARG_FUNCTION}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedTemplatesScript.cmake
    DEPENDS ${ARG_FILES} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedTemplatesScript.cmake
    COMMENT "Embedding files for convgen::${ARG_FUNCTION}()"
    VERBATIM)
endfunction()
