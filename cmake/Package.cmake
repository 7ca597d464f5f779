# The installed package: find_package(hookhost CONFIG), pkg-config files for plain Makefiles,
# the docs and examples. Every installed file locates the others relative to itself, so an
# installation can be moved (no absolute path of the build is written anywhere).
include(CMakePackageConfigHelpers)

set(HOOKHOST_INSTALL_CMAKE_DIR "lib/cmake/hookhost")
set(HOOKHOST_INSTALL_PLUGIN_DIR "lib/hookhost/plugins")
set(HOOKHOST_INSTALL_DOC_DIR "share/doc/hookhost")

install(EXPORT hookhostPluginTargets NAMESPACE hookhost:: DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})
install(EXPORT hookhostHostTargets NAMESPACE hookhost:: DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})
if(TARGET hookhost_mpi)
  install(EXPORT hookhostMpiTargets NAMESPACE hookhost:: DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})
endif()

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/hookhostConfig.cmake.in"
  "${CMAKE_CURRENT_BINARY_DIR}/package/hookhostConfig.cmake"
  INSTALL_DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR}
  PATH_VARS HOOKHOST_INSTALL_PLUGIN_DIR CMAKE_INSTALL_BINDIR)
# ABI 1.x stays binary compatible: find_package(hookhost 1.0) accepts any 1.y.
write_basic_package_version_file(
  "${CMAKE_CURRENT_BINARY_DIR}/package/hookhostConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/package/hookhostConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/package/hookhostConfigVersion.cmake"
        DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})

# The host's archives for pkg-config, in link order: each before what it uses. The plugins and
# runtime archives use each other (src/README.md), so the runtime comes again after the plugins.
set(HOOKHOST_PC_LIBS
    "-lhookhost_testing -lhookhost_job -lhookhost_sandbox -lhookhost_runtime -lhookhost_plugins \
-lhookhost_runtime -lhookhost_confine -lhookhost_support")
set(_pc_files hookhost-plugin hookhost)
if(TARGET hookhost_mpi)
  list(APPEND _pc_files hookhost-mpi)
endif()
foreach(_pc IN LISTS _pc_files)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in"
                 "${CMAKE_CURRENT_BINARY_DIR}/package/${_pc}.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/package/${_pc}.pc" DESTINATION lib/pkgconfig)
endforeach()

# The installed docs are read without the source tree: the README gets a lead saying so, and the
# example configs lose their run_dir line (a folder of the source tree; installed, it would point
# into share/doc), so a job started from them writes to ./hookhost-run where the user runs it.
set(_installed_docs "${CMAKE_CURRENT_BINARY_DIR}/package/doc")
file(READ "${PROJECT_SOURCE_DIR}/cmake/installed-readme-lead.md" _lead)
file(READ "${PROJECT_SOURCE_DIR}/README.md" _readme)
file(WRITE "${_installed_docs}/README.md" "${_lead}\n${_readme}")
set(_example_configs demo.ini python/loss_hook.ini python/more_hooks.ini pytorch/digits.ini)
foreach(_ini IN LISTS _example_configs)
  file(READ "${PROJECT_SOURCE_DIR}/examples/${_ini}" _text)
  string(REGEX REPLACE "\nrun_dir *=[^\n]*" "" _text "${_text}")
  file(WRITE "${_installed_docs}/examples/${_ini}" "${_text}")
  get_filename_component(_subdir "${_ini}" DIRECTORY)
  install(FILES "${_installed_docs}/examples/${_ini}"
          DESTINATION ${HOOKHOST_INSTALL_DOC_DIR}/examples/${_subdir})
  list(APPEND _installed_doc_sources "${PROJECT_SOURCE_DIR}/examples/${_ini}")
endforeach()
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/cmake/installed-readme-lead.md"
             ${_installed_doc_sources})
install(FILES "${_installed_docs}/README.md" DESTINATION ${HOOKHOST_INSTALL_DOC_DIR})
install(DIRECTORY docs/ DESTINATION ${HOOKHOST_INSTALL_DOC_DIR}/docs)
install(DIRECTORY examples/ DESTINATION ${HOOKHOST_INSTALL_DOC_DIR}/examples
        PATTERN demo.ini EXCLUDE PATTERN loss_hook.ini EXCLUDE PATTERN more_hooks.ini EXCLUDE
        PATTERN digits.ini EXCLUDE PATTERN __pycache__ EXCLUDE)
