# normgrad::blas — OpenBLAS's CBLAS interface, as an imported target. Included both by the
# build and by the installed package configuration, so a consumer finds the same library.
#
# The OpenMP build of OpenBLAS comes first where there is one (Debian: libopenblas-openmp-dev,
# under <libdir>/openblas-openmp; Fedora: libopenblaso). Its GEMMs then run on the same
# OpenMP threads as normgrad's own loops. With the default pthreads build there are two pools
# of threads that wait by spinning: after an OpenMP loop its threads keep spinning while
# OpenBLAS's need the cores, and after a GEMM the other way round. On 2 cores that made a
# conv2d layer (im2col, then a GEMM) take about three times as long as its GEMM alone.

if(NOT TARGET normgrad::blas)
  # Read directly rather than through find_package, whose cached OpenBLAS_DIR would keep a
  # build tree on the library it found first.
  set(_normgrad_openmp_blas
      /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp/cmake/openblas/OpenBLASConfig.cmake)
  if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS ${_normgrad_openmp_blas})
    include(${_normgrad_openmp_blas})  # sets OpenBLAS_INCLUDE_DIRS and OpenBLAS_LIBRARIES
    set(OpenBLAS_FOUND TRUE)
  else()
    find_package(OpenBLAS CONFIG QUIET)
  endif()
  if(OpenBLAS_FOUND)
    set(_normgrad_blas_include ${OpenBLAS_INCLUDE_DIRS})
    set(_normgrad_blas_library ${OpenBLAS_LIBRARIES})
  else()
    find_path(_normgrad_blas_include cblas.h PATH_SUFFIXES openblas)
    find_library(_normgrad_blas_library NAMES openblaso openblas)
  endif()
  if(NOT _normgrad_blas_include OR NOT _normgrad_blas_library)
    message(FATAL_ERROR "normgrad: OpenBLAS not found. Install it with: apt-get install libopenblas-dev "
                        "libopenblas-openmp-dev (or run scripts/setup)")
  endif()
  add_library(normgrad::blas INTERFACE IMPORTED)
  target_include_directories(normgrad::blas INTERFACE ${_normgrad_blas_include})
  target_link_libraries(normgrad::blas INTERFACE ${_normgrad_blas_library})
  if(NOT normgrad_FIND_QUIETLY)
    message(STATUS "normgrad: BLAS is OpenBLAS (${_normgrad_blas_library})")
  endif()
endif()
