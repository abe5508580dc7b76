# normgrad::blas — OpenBLAS's CBLAS interface, as an imported target. Included both by the
# build and by the installed package configuration, so a consumer finds the same library.

# OpenBLAS's OpenMP build is preferred: it runs its GEMMs on the same OpenMP threads as
# normgrad's own kernels. The pthreads build keeps a second pool of threads, and on a
# machine with as many threads as cores each pool spins on the cores the other needs between
# a GEMM and an elementwise kernel; a GRU training step took 1.7x as long with it. Debian
# installs the two builds side by side (libopenblas-openmp-dev, libopenblas-pthread-dev).

if(NOT TARGET normgrad::blas)
  set(_normgrad_blas_openmp_lib /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  set(_normgrad_blas_openmp_include /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  find_library(_normgrad_blas_openmp NAMES openblas PATHS ${_normgrad_blas_openmp_lib}
               NO_DEFAULT_PATH)
  find_path(_normgrad_blas_openmp_header cblas.h PATHS ${_normgrad_blas_openmp_include}
            NO_DEFAULT_PATH)
  if(_normgrad_blas_openmp AND _normgrad_blas_openmp_header)
    set(_normgrad_blas_include ${_normgrad_blas_openmp_header})
    set(_normgrad_blas_library ${_normgrad_blas_openmp})
  else()
    find_package(OpenBLAS CONFIG QUIET)
    if(OpenBLAS_FOUND)
      set(_normgrad_blas_include ${OpenBLAS_INCLUDE_DIRS})
      set(_normgrad_blas_library ${OpenBLAS_LIBRARIES})
    else()
      find_path(_normgrad_blas_include cblas.h PATH_SUFFIXES openblas)
      find_library(_normgrad_blas_library NAMES openblas)
    endif()
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
