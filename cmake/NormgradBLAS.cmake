# normgrad::blas — OpenBLAS's CBLAS interface, as an imported target. Included both by the
# build and by the installed package configuration, so a consumer finds the same library.

if(NOT TARGET normgrad::blas)
  find_package(OpenBLAS CONFIG QUIET)
  if(OpenBLAS_FOUND)
    set(_normgrad_blas_include ${OpenBLAS_INCLUDE_DIRS})
    set(_normgrad_blas_library ${OpenBLAS_LIBRARIES})
  else()
    find_path(_normgrad_blas_include cblas.h PATH_SUFFIXES openblas)
    find_library(_normgrad_blas_library NAMES openblas)
  endif()
  if(NOT _normgrad_blas_include OR NOT _normgrad_blas_library)
    message(FATAL_ERROR "normgrad: OpenBLAS not found. Install it with: apt-get install libopenblas-dev "
                        "(or run scripts/setup)")
  endif()
  add_library(normgrad::blas INTERFACE IMPORTED)
  target_include_directories(normgrad::blas INTERFACE ${_normgrad_blas_include})
  target_link_libraries(normgrad::blas INTERFACE ${_normgrad_blas_library})
  if(NOT normgrad_FIND_QUIETLY)
    message(STATUS "normgrad: BLAS is OpenBLAS (${_normgrad_blas_library})")
  endif()
endif()
