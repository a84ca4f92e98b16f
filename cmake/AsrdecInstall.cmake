include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ASRDEC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/asrdec")

install(TARGETS asrdec asrdec_graph EXPORT asrdecTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/asrdec" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.inl")
install(FILES "${PROJECT_BINARY_DIR}/include/asrdec/config.hpp" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/asrdec")
install(EXPORT asrdecTargets NAMESPACE asrdec:: DESTINATION "${ASRDEC_INSTALL_CMAKEDIR}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/asrdecConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/asrdecConfig.cmake"
                              INSTALL_DESTINATION "${ASRDEC_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/asrdecConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/asrdecConfig.cmake" "${PROJECT_BINARY_DIR}/asrdecConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindOpenFst.cmake"
        DESTINATION "${ASRDEC_INSTALL_CMAKEDIR}")
if(ASRDEC_BUILD_TOOLS)
  install(TARGETS asrdec_cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()
