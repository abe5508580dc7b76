#!/usr/bin/env bash
# Builds and runs tests/consumer, a project outside normgrad, against normgrad in one of the two
# ways users get it, and checks what it prints.
#   run_consumer_test.sh package      <source dir> <build dir> <scratch dir>
#       installs <build dir> into <scratch>/prefix, then uses find_package(normgrad): the core
#       alone, which must never look for sentencepiece (the text toolkit's dependency), then
#       again with the component text
#   run_consumer_test.sh subdirectory <source dir> <build dir> <scratch dir>
#       builds normgrad again inside the consumer with add_subdirectory (the core library only,
#       without the text toolkit)
# CXX/CC in the environment pick the compiler, as for any CMake project.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 package|subdirectory <normgrad source dir> <normgrad build dir> <scratch dir>" >&2
  exit 2
fi
mode=$1 source_dir=$(realpath "$2") build_dir=$(realpath "$3") scratch=$4
mkdir -p "$scratch"
scratch=$(realpath "$scratch")
consumer_build=$scratch/build

case "$mode" in
  package)
    # A fresh prefix and consumer build each time: this checks the install, not a leftover.
    rm -rf "$scratch/prefix" "$consumer_build"
    cmake --install "$build_dir" --prefix "$scratch/prefix"
    if [[ -z $(find "$scratch/prefix" -name normgradConfigVersion.cmake) ]]; then
      echo "FAIL: no normgradConfigVersion.cmake was installed" >&2
      exit 1
    fi
    # Installed headers and CMake files must not point back into the source or build tree.
    if grep -rlF -e "$source_dir" -e "$build_dir" "$scratch/prefix" --include='*.h' --include='*.cmake'; then
      echo "FAIL: the installed files above refer to the source or build tree" >&2
      exit 1
    fi
    configure_args=(-DNORMGRAD_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$scratch/prefix"
                    -DCMAKE_BUILD_TYPE=Release)
    ;;
  subdirectory)
    # The build directory is kept between runs, so a rerun only recompiles what changed. The
    # library is built again here, so without its CUDA kernels, which would double the time
    # (the package mode above checks a library built with them), without optimisation, and as a
    # unity build (a few large files instead of one per source): this checks how the project
    # builds as a subdirectory, not how fast it runs. From nothing: 33 s, against 80 s file by
    # file.
    # NORMGRAD_TEXT=OFF: the core builds where sentencepiece is not installed, since nothing of
    # it includes or links sentencepiece.
    configure_args=(-DNORMGRAD_CONSUMER_MODE=subdirectory -DNORMGRAD_SOURCE_DIR="$source_dir"
                    -DNORMGRAD_CUDA=OFF -DNORMGRAD_TEXT=OFF -DCMAKE_BUILD_TYPE=Debug
                    -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_UNITY_BUILD=ON)
    ;;
  *)
    echo "unknown mode '$mode': use package or subdirectory" >&2
    exit 2
    ;;
esac

# A fresh configuration (the objects of the last build are kept): what it looks for is checked
# below, and an old cache would still hold what an earlier configuration found.
rm -f "$consumer_build/CMakeCache.txt"
cmake -S "$source_dir/tests/consumer" -B "$consumer_build" "${configure_args[@]}"
cmake --build "$consumer_build" -j2

output=$("$consumer_build/consumer")
echo "$output"
if ! grep -qx 'sum = 6' <<<"$output"; then
  echo "FAIL: expected the line 'sum = 6' in the consumer's output" >&2
  exit 1
fi
# The core's users never meet sentencepiece: no lookup of it in their configuration, and no
# library of it in their program.
if grep -q 'normgrad_spm' "$consumer_build/CMakeCache.txt"; then
  echo "FAIL: configuring against the core looked for sentencepiece" >&2
  exit 1
fi
if ldd "$consumer_build/consumer" | grep -q sentencepiece; then
  echo "FAIL: the core's consumer links sentencepiece" >&2
  exit 1
fi

if [[ $mode == package ]]; then
  cmake -S "$source_dir/tests/consumer" -B "$consumer_build" "${configure_args[@]}" \
        -DNORMGRAD_CONSUMER_TEXT=ON
  cmake --build "$consumer_build" -j2
  output=$("$consumer_build/consumer_text")
  echo "$output"
  if ! grep -q '^BLEU = 100.00 ' <<<"$output"; then
    echo "FAIL: expected a line starting 'BLEU = 100.00' from the text toolkit's consumer" >&2
    exit 1
  fi
fi
echo "PASS: consumer ($mode)"
