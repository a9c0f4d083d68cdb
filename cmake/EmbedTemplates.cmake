# EmbedTemplates: turns the kernel templates into a C++ source holding their text, so installed binaries need no template files.
#
# convgen_embed_templates(OUTPUT <file.cpp> FILES <abs paths...>) writes a
# translation unit defining convgen::embedded_templates(), a list of
# {file name, text} pairs. The text is split into raw-string chunks to stay
# under compilers' string-literal limits.
function(convgen_embed_templates)
  cmake_parse_arguments(ARG "" "OUTPUT" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} "-DFILES=${ARG_FILES}"
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedTemplatesScript.cmake
    DEPENDS ${ARG_FILES} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedTemplatesScript.cmake
    COMMENT "Embedding kernel templates"
    VERBATIM)
endfunction()
