# The optional distributed component: process groups over MPI for CPU tensors, and NCCL for
# CUDA tensors when the CUDA backend is on and NCCL is found. NORMGRAD_DISTRIBUTED is AUTO (use
# MPI when it is found), ON (require it) or OFF. With it, distributed/*.cpp is compiled and
# linked with MPI's library; without it, distributed/no_mpi.cpp stands in for the mpi_*.cpp
# files, and every use of the process group is an Error saying how to get it.

set(NORMGRAD_DISTRIBUTED AUTO CACHE STRING "Build the distributed component: AUTO, ON or OFF")
set_property(CACHE NORMGRAD_DISTRIBUTED PROPERTY STRINGS AUTO ON OFF)
if(NOT NORMGRAD_DISTRIBUTED MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR
          "normgrad: NORMGRAD_DISTRIBUTED must be AUTO, ON or OFF, got '${NORMGRAD_DISTRIBUTED}'")
endif()

set(NORMGRAD_WITH_MPI OFF)
if(NOT NORMGRAD_DISTRIBUTED STREQUAL "OFF")
  # MPI's C interface, compiled as C++: MPI_CXX_SKIP_MPICXX leaves out the C++ bindings that
  # MPI 3 deprecated (OpenMPI's and MPICH's headers would otherwise pull them in).
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(NORMGRAD_WITH_MPI ON)
    message(STATUS "normgrad: distributed component on: MPI ${MPI_CXX_VERSION}, launcher "
                   "${MPIEXEC_EXECUTABLE}")
  elseif(NORMGRAD_DISTRIBUTED STREQUAL "ON")
    message(FATAL_ERROR "normgrad: NORMGRAD_DISTRIBUTED=ON but no MPI was found. Install it "
                        "(Debian: libopenmpi-dev openmpi-bin), or configure with "
                        "-DNORMGRAD_DISTRIBUTED=OFF.")
  else()
    message(STATUS "normgrad: distributed component off: no MPI found "
                   "(Debian: libopenmpi-dev openmpi-bin)")
  endif()
else()
  message(STATUS "normgrad: distributed component off (NORMGRAD_DISTRIBUTED=OFF)")
endif()

# NCCL, for collectives on CUDA tensors, when both MPI and the CUDA backend are on: the CUDA
# toolkit's copy or a system one. Without it, CUDA tensors are refused by the process group and
# DataParallel exchanges their gradients through host memory.
set(NORMGRAD_WITH_NCCL OFF)
if(NORMGRAD_WITH_MPI AND NORMGRAD_WITH_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(NORMGRAD_WITH_NCCL ON)
    message(STATUS "normgrad: NCCL for CUDA tensors: ${NCCL_LIBRARY}")
  else()
    message(STATUS "normgrad: no NCCL found: CUDA gradients are exchanged through host memory")
  endif()
endif()

# Adds the distributed component's sources to the library: with MPI, every distributed/*.cpp
# but the stand-in no_mpi.cpp; without, the stand-in in place of the mpi_*.cpp files (the rest,
# such as DataParallel, only call the process group, whose every use is then an Error). Likewise
# nccl_*.cpp with NCCL, or no_nccl.cpp without it.
function(normgrad_add_distributed target)
  file(GLOB distributed_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/distributed/*.cpp)
  if(NORMGRAD_WITH_MPI)
    list(FILTER distributed_sources EXCLUDE REGEX "/no_mpi\\.cpp$")
    target_link_libraries(${target} PRIVATE MPI::MPI_CXX)
    target_compile_definitions(${target} PRIVATE NORMGRAD_WITH_MPI=1)
  else()
    list(FILTER distributed_sources EXCLUDE REGEX "/mpi_[^/]*\\.cpp$")
  endif()
  if(NORMGRAD_WITH_NCCL)
    list(FILTER distributed_sources EXCLUDE REGEX "/no_nccl\\.cpp$")
    target_include_directories(${target} PRIVATE ${NCCL_INCLUDE_DIR})
    target_link_libraries(${target} PRIVATE ${NCCL_LIBRARY})
  else()
    list(FILTER distributed_sources EXCLUDE REGEX "/nccl_[^/]*\\.cpp$")
  endif()
  target_sources(${target} PRIVATE ${distributed_sources})
endfunction()
