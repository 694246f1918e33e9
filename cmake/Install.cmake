# Install rules: headers (sources and generated .inc), the dialect and C API
# libraries, fa-opt, and a CMake package (FlashAttnConfig.cmake) so that an
# MLIR-based compiler can find_package(FlashAttn) and link FlashAttn::MLIRFlashAttn.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FLASHATTN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/FlashAttn)

install(DIRECTORY include/flashattn include/flashattn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT flashattn-headers
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/flashattn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT flashattn-headers
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

foreach(lib MLIRFlashAttn MLIRFlashAttnBufferization MLIRFlashAttnDecomposition MLIRFlashAttnTiling MLIRFlashAttnTransforms MLIRFlashAttnToVector MLIRFlashAttnToSm90
            MLIRFlashAttnPipelines FlashAttnCAPI)
  target_include_directories(${lib} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()

install(TARGETS flashattn_compiler fa-compile fa-run
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS MLIRFlashAttn MLIRFlashAttnBufferization MLIRFlashAttnDecomposition MLIRFlashAttnTiling MLIRFlashAttnTransforms MLIRFlashAttnToVector MLIRFlashAttnToSm90
  MLIRFlashAttnPipelines FlashAttnCAPI fa-opt
  EXPORT FlashAttnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT FlashAttnTargets
  NAMESPACE FlashAttn::
  DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/FlashAttnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/FlashAttnConfig.cmake
  INSTALL_DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/FlashAttnConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/FlashAttnConfig.cmake
  ${PROJECT_BINARY_DIR}/FlashAttnConfigVersion.cmake
  DESTINATION ${FLASHATTN_INSTALL_CMAKEDIR})
