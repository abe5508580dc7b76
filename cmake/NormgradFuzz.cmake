# -DNORMGRAD_FUZZ=ON: everything is compiled for libFuzzer's coverage guidance and with
# AddressSanitizer and UndefinedBehaviorSanitizer, and tests/fuzz adds one fuzzer program per
# harness. libFuzzer comes with clang (Debian: clang and libclang-rt-<version>-dev), so this
# build needs clang; scripts/fuzz configures it.

if(NORMGRAD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NORMGRAD_FUZZ needs clang (libFuzzer), but the C++ compiler is "
                        "${CMAKE_CXX_COMPILER_ID}: configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang, or run scripts/fuzz")
  endif()
  if(NORMGRAD_SANITIZE)
    message(FATAL_ERROR "NORMGRAD_FUZZ already builds with the sanitizers; leave NORMGRAD_SANITIZE off")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
