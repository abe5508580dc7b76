# ctest registration of the consumer tests (label "consumer"): tests/consumer built as an outside
# project against this build, through find_package after `cmake --install` and through
# add_subdirectory. Included from tests/CMakeLists.txt. The consumer uses the same compilers.
foreach(mode package subdirectory)
  add_test(NAME consumer_${mode}
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/consumer/run_consumer_test.sh ${mode}
                   ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/consumer/${mode})
  set_tests_properties(consumer_${mode} PROPERTIES
    LABELS consumer
    ENVIRONMENT "CXX=${CMAKE_CXX_COMPILER};CC=${CMAKE_C_COMPILER}"
    PROCESSORS 2
    TIMEOUT 1800)
endforeach()
