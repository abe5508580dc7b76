# The optional CUDA component. NORMGRAD_CUDA is AUTO (use the toolkit when one is found), ON
# (require it) or OFF. Builds without CUDA compile backends/cuda/no_cuda.cpp, a stand-in that
# answers "no GPU" and refuses CUDA tensors with a clear error.

set(NORMGRAD_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE NORMGRAD_CUDA PROPERTY STRINGS AUTO ON OFF)

set(NORMGRAD_WITH_CUDA OFF)
if(NOT NORMGRAD_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    message(STATUS "normgrad: CUDA toolkit found: ${CMAKE_CUDA_COMPILER} "
                   "(version ${CUDAToolkit_VERSION})")
    set(NORMGRAD_CUDA_TOOLKIT_FOUND ON)
  elseif(NORMGRAD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "normgrad: NORMGRAD_CUDA=ON but no CUDA compiler was found. Put nvcc on "
                        "PATH (or set CMAKE_CUDA_COMPILER), or configure with -DNORMGRAD_CUDA=OFF.")
  else()
    message(STATUS "normgrad: no CUDA toolkit found")
  endif()
endif()
message(STATUS "normgrad: CUDA backend: this version has the CPU backend only; CUDA devices "
               "report unavailable (backends/cuda/no_cuda.cpp)")
