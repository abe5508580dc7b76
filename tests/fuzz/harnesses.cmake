# The harnesses' names and sources, shared by the fuzzer programs (tests/fuzz/CMakeLists.txt)
# and the test suite, which replays tests/fuzz/regressions/ through the same functions.
set(NORMGRAD_FUZZ_HARNESSES safetensors training_state idx idx_gzip mnist_folder norm_spec npy)
set(NORMGRAD_FUZZ_HARNESS_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/harnesses.cpp ${CMAKE_CURRENT_LIST_DIR}/harness_support.cpp)
foreach(harness ${NORMGRAD_FUZZ_HARNESSES})
  list(APPEND NORMGRAD_FUZZ_HARNESS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_${harness}.cpp)
endforeach()
