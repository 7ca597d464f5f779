# The installed package: find_package(hookhost CONFIG), pkg-config files for plain Makefiles,
# the docs and examples. Every installed file locates the others relative to itself, so an
# installation can be moved (no absolute path of the build is written anywhere).
include(CMakePackageConfigHelpers)

set(HOOKHOST_INSTALL_CMAKE_DIR "lib/cmake/hookhost")
set(HOOKHOST_INSTALL_PLUGIN_DIR "lib/hookhost/plugins")
set(HOOKHOST_INSTALL_DOC_DIR "share/doc/hookhost")

install(EXPORT hookhostPluginTargets NAMESPACE hookhost:: DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})
install(EXPORT hookhostHostTargets NAMESPACE hookhost:: DESTINATION ${HOOKHOST_INSTALL_CMAKE_DIR})

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

foreach(_pc IN ITEMS hookhost-plugin hookhost)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in"
                 "${CMAKE_CURRENT_BINARY_DIR}/package/${_pc}.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/package/${_pc}.pc" DESTINATION lib/pkgconfig)
endforeach()

install(FILES README.md DESTINATION ${HOOKHOST_INSTALL_DOC_DIR})
install(DIRECTORY docs/ DESTINATION ${HOOKHOST_INSTALL_DOC_DIR}/docs)
install(DIRECTORY examples/ DESTINATION ${HOOKHOST_INSTALL_DOC_DIR}/examples)
