# The text toolkit, normgrad::text (text/ and decoding/), a second library beside the core.
# NORMGRAD_TEXT is AUTO (built when sentencepiece is found), ON (sentencepiece required) or OFF.
# The core library never needs sentencepiece, so a project that links normgrad::normgrad alone
# builds without it. The examples, tools, benchmarks and tests work on text, so building them
# requires the toolkit.
set(NORMGRAD_TEXT AUTO CACHE STRING "Build the text toolkit normgrad::text: AUTO, ON or OFF")
set_property(CACHE NORMGRAD_TEXT PROPERTY STRINGS AUTO ON OFF)
if(NOT NORMGRAD_TEXT MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "normgrad: NORMGRAD_TEXT must be AUTO, ON or OFF, got '${NORMGRAD_TEXT}'")
endif()

set(NORMGRAD_WITH_TEXT OFF)
set(_normgrad_text_needed OFF)
if(NORMGRAD_TEXT STREQUAL "ON" OR NORMGRAD_BUILD_TESTS OR NORMGRAD_BUILD_EXAMPLES
   OR NORMGRAD_BUILD_TOOLS OR NORMGRAD_BUILD_BENCH)
  set(_normgrad_text_needed ON)
endif()
if(NORMGRAD_TEXT STREQUAL "OFF")
  if(NORMGRAD_BUILD_TESTS OR NORMGRAD_BUILD_EXAMPLES OR NORMGRAD_BUILD_TOOLS OR NORMGRAD_BUILD_BENCH)
    message(FATAL_ERROR "normgrad: NORMGRAD_TEXT=OFF leaves out the text toolkit, which the tests, "
                        "examples, tools and benchmarks use; turn them off too "
                        "(-DNORMGRAD_BUILD_TESTS=OFF -DNORMGRAD_BUILD_EXAMPLES=OFF "
                        "-DNORMGRAD_BUILD_TOOLS=OFF -DNORMGRAD_BUILD_BENCH=OFF)")
  endif()
  message(STATUS "normgrad: text toolkit off (NORMGRAD_TEXT=OFF)")
else()
  include(NormgradSentencepiece)
  if(NORMGRAD_SENTENCEPIECE_FOUND)
    set(NORMGRAD_WITH_TEXT ON)
    message(STATUS "normgrad: text toolkit on (normgrad::text, with sentencepiece)")
  elseif(_normgrad_text_needed)
    message(FATAL_ERROR "normgrad: the text toolkit needs sentencepiece, which was not found. "
                        "Install it with: apt-get install libsentencepiece-dev (or run "
                        "scripts/setup), or configure with -DNORMGRAD_TEXT=OFF and without the "
                        "tests, examples, tools and benchmarks.")
  else()
    message(STATUS "normgrad: text toolkit off: sentencepiece not found")
  endif()
endif()
