include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ASRDEC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/asrdec")

# The component targets asrdec_core and asrdec_wfst are defined with the libraries (src/CMakeLists.txt).
install(TARGETS ${ASRDEC_INSTALLED_LIBRARY} ${ASRDEC_INSTALLED_GRAPH_LIBRARY} asrdec_core asrdec_wfst
        EXPORT asrdecTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/asrdec" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.inl")
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

# pkg-config: `pkg-config --cflags --libs asrdec` for builds without CMake. A shared install needs nothing else; a
# static one lists its dependencies for `pkg-config --static`.
file(RELATIVE_PATH ASRDEC_PC_RELATIVE_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" ASRDEC_PC_RELATIVE_PREFIX "${ASRDEC_PC_RELATIVE_PREFIX}")
if(ASRDEC_BUILD_SHARED)
  set(ASRDEC_PC_LIBS_PRIVATE "")
else()
  set(ASRDEC_PC_LIBS_PRIVATE "-lz -ldl -lpthread")
  if(ASRDEC_WITH_CUDA)
    string(APPEND ASRDEC_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
  endif()
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/asrdec.pc.in" "${PROJECT_BINARY_DIR}/asrdec.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/asrdec.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
