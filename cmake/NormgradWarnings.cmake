# Warnings on everywhere; -Werror on request (CI turns it on). Sanitizers for `scripts/test
# --sanitize`.

function(normgrad_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
  # clang reports each `#pragma omp simd` loop it leaves scalar (at -O1, or with the fuzzer's
  # instrumentation): a hint not taken, not a fault in the code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-pass-failed>)
  endif()
  if(NORMGRAD_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

function(normgrad_set_sanitizers target)
  if(NORMGRAD_SANITIZE)
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer
                                            -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()
