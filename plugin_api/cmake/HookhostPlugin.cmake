# hookhost_add_plugin(NAME source...)
#
# Builds a hookhost plugin the way every plugin should be built: a MODULE library named NAME.so,
# hidden visibility, only the entry symbol exported (version script), every symbol resolved at link
# time (-z defs) and bound at load (-z now), position-independent. Works for C and C++ sources.
# C++ sources get -Werror=suggest-override (GCC, Clang): every callback a hook overrides must say
# `override`, so a callback whose name or signature is wrong fails to compile instead of silently
# never being called.
set(HOOKHOST_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/hookhost_plugin.map"
    CACHE INTERNAL "version script for hookhost plugins")

function(hookhost_add_plugin name)
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE hookhost::plugin_api)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    LINK_DEPENDS "${HOOKHOST_PLUGIN_MAP}")
  target_compile_options(${name} PRIVATE
    "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<OR:$<CXX_COMPILER_ID:GNU>,$<CXX_COMPILER_ID:Clang>>>:-Werror=suggest-override>")
  target_link_options(${name} PRIVATE
    -Wl,-z,defs -Wl,-z,now -Wl,--exclude-libs,ALL
    "-Wl,--version-script=${HOOKHOST_PLUGIN_MAP}")
endfunction()
