# Install rules: `cmake --install` puts the library, its headers under include/normgrad/, and a
# package configuration, so that another project can find_package(normgrad).
#
# Installed layout (under the prefix):
#   include/normgrad/normgrad.h            the umbrella header users include
#   include/normgrad/<folder>/*.h          the library headers, folders kept, so that their
#                                          root-relative includes ("core/tensor.h") resolve
#                                          through the include/normgrad directory
#   include/normgrad/text.h                the text toolkit's umbrella header (with its folders
#                                          text/ and decoding/)
#   <libdir>/libnormgrad.{a,so}, libnormgrad_text.{a,so}
#   <libdir>/cmake/normgrad/               normgradConfig.cmake, its version file, the exported
#                                          targets (the text toolkit's in a file of their own),
#                                          NormgradBLAS.cmake and NormgradSentencepiece.cmake
#
# normgrad::blas is an imported target, so the export refers to it by name only (for a static
# library as $<LINK_ONLY:normgrad::blas>): normgradConfig.cmake re-creates it with the same
# NormgradBLAS.cmake before loading the targets, so consumers of a static normgrad link OpenBLAS.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NORMGRAD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/normgrad)

install(TARGETS normgrad EXPORT normgradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The text toolkit in an export set of its own, which the package configuration loads only for
# find_package(normgrad COMPONENTS text): a project that uses the core alone never looks for
# sentencepiece.
if(NORMGRAD_WITH_TEXT)
  install(TARGETS normgrad_text EXPORT normgradTextTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT normgradTextTargets
          NAMESPACE normgrad::
          DESTINATION ${NORMGRAD_INSTALL_CMAKEDIR})
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/normgrad_text.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/normgrad RENAME text.h)
endif()

# Every library header, at its folder under include/normgrad/ (one install per file, so that
# folders without headers are not created empty).
file(GLOB_RECURSE NORMGRAD_HEADERS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
     base/*.h profiler/*.h core/*.h backends/*.h autograd/*.h nn/*.h optim/*.h io/*.h data/*.h
     distributed/*.h)
if(NORMGRAD_WITH_TEXT)
  file(GLOB_RECURSE NORMGRAD_TEXT_HEADERS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       text/*.h decoding/*.h)
  list(APPEND NORMGRAD_HEADERS ${NORMGRAD_TEXT_HEADERS})
endif()
foreach(header ${NORMGRAD_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/normgrad/${folder})
endforeach()
# The real umbrella header, not the build tree's forwarding one.
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/normgrad.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/normgrad)

install(EXPORT normgradTargets
        NAMESPACE normgrad::
        DESTINATION ${NORMGRAD_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/normgradConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/normgradConfig.cmake
  INSTALL_DESTINATION ${NORMGRAD_INSTALL_CMAKEDIR})
# 0.x releases may break the API between minor versions, hence SameMinorVersion.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/normgradConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/normgradConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/normgradConfigVersion.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/NormgradBLAS.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/NormgradSentencepiece.cmake
  DESTINATION ${NORMGRAD_INSTALL_CMAKEDIR})

# A shared build gets a versioned soname; 0.x minor versions are not ABI-compatible.
set_target_properties(normgrad PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
if(NORMGRAD_WITH_TEXT)
  set_target_properties(normgrad_text PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
endif()
