# The optional CUDA component. NORMGRAD_CUDA is AUTO (use the toolkit when one is found), ON
# (require it) or OFF. With it, backends/cuda/ is compiled (its .cu kernels with nvcc, its host
# code with the C++ compiler) and linked with the CUDA runtime and cuBLAS; without it, only
# backends/cuda/no_cuda.cpp, a stand-in that answers "no GPU" and refuses CUDA tensors with a
# clear error. A build with CUDA runs on machines without a GPU too: it reports no device.
#
# CMAKE_CUDA_ARCHITECTURES defaults to "80-real;90": machine code for Ampere (sm_80, A100) and
# Hopper (sm_90, H100/H200), and sm_90's PTX, which the driver compiles for newer GPUs at
# first use. Set it on the command line for other GPUs, e.g. -DCMAKE_CUDA_ARCHITECTURES=native.

set(NORMGRAD_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE NORMGRAD_CUDA PROPERTY STRINGS AUTO ON OFF)
if(NOT NORMGRAD_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "normgrad: NORMGRAD_CUDA must be AUTO, ON or OFF, got '${NORMGRAD_CUDA}'")
endif()

set(NORMGRAD_WITH_CUDA OFF)
if(NOT NORMGRAD_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)  # the toolkit's usual home, off PATH
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "GPU architectures to compile for")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # CMake before 3.26 does not know nvcc's flag for C++20 (nvcc has it since CUDA 12.0).
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(NORMGRAD_WITH_CUDA ON)
    message(STATUS "normgrad: CUDA backend on: ${CMAKE_CUDA_COMPILER} "
                   "(CUDA ${CUDAToolkit_VERSION}), architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(NORMGRAD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "normgrad: NORMGRAD_CUDA=ON but no CUDA compiler was found. Put nvcc on "
                        "PATH (or set CMAKE_CUDA_COMPILER), or configure with -DNORMGRAD_CUDA=OFF.")
  else()
    message(STATUS "normgrad: CUDA backend off: no CUDA toolkit found "
                   "(CUDA devices report unavailable)")
  endif()
else()
  message(STATUS "normgrad: CUDA backend off (NORMGRAD_CUDA=OFF)")
endif()

# Adds the CUDA backend's sources to the library, or its CPU-only stand-in.
function(normgrad_add_cuda_backend target)
  if(NORMGRAD_WITH_CUDA)
    file(GLOB cuda_sources CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/backends/cuda/*.cpp ${PROJECT_SOURCE_DIR}/backends/cuda/*.cu)
    list(FILTER cuda_sources EXCLUDE REGEX "no_cuda\\.cpp$")
    target_sources(${target} PRIVATE ${cuda_sources})
    target_link_libraries(${target} PRIVATE CUDA::cudart CUDA::cublas)
    target_compile_definitions(${target} PRIVATE NORMGRAD_WITH_CUDA=1)
    # Kernels: fast math off (results must match the CPU), warnings as for C++ code, and
    # lambdas usable in device code.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --extended-lambda -Xcompiler=-Wall>)
    if(NORMGRAD_WERROR)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
    endif()
  else()
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/backends/cuda/no_cuda.cpp)
  endif()
endfunction()
