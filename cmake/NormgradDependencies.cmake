# Dependencies, all from Debian packages (scripts/setup installs them):
#   OpenMP (g++), OpenBLAS (libopenblas-dev; its OpenMP build libopenblas-openmp-dev is
#   preferred, see NormgradBLAS.cmake), doctest (doctest-dev), CLI11 (libcli11-dev),
#   Google Benchmark (libbenchmark-dev), nlohmann-json (nlohmann-json3-dev), xxHash
#   (libxxhash-dev); sentencepiece (libsentencepiece-dev) for the text toolkit alone
#   (NormgradText.cmake).

find_package(OpenMP REQUIRED COMPONENTS CXX)
include(NormgradBLAS)  # defines normgrad::blas

# nlohmann-json reads and writes the safetensors header of checkpoints (header-only, used
# inside the library's .cpp files only).
find_package(nlohmann_json 3 REQUIRED)
# zlib reads the gzip-compressed IDX files of MNIST-format datasets (data/idx.cpp).
find_package(ZLIB REQUIRED)
# xxHash checksums each tensor of a checkpoint (io/checkpoint.cpp). It is used header-only
# (XXH_INLINE_ALL), so the library links nothing more.
find_path(NORMGRAD_XXHASH_INCLUDE_DIR xxhash.h)
if(NOT NORMGRAD_XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found: install libxxhash-dev (scripts/setup does)")
endif()
if(NORMGRAD_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(NORMGRAD_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(NORMGRAD_BUILD_EXAMPLES OR NORMGRAD_BUILD_BENCH OR NORMGRAD_BUILD_TOOLS)
  find_package(CLI11 REQUIRED)
endif()
