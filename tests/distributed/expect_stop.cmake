# Runs `mpirun -np 2 rank_stops MODE` and passes when the job ends with a non-zero status within
# LIMIT seconds and its output matches EXPECT: the ranks that did not stop end too.
#   cmake -DMPIEXEC=... -DPROGRAM=... -DMODE=error|kill -DEXPECT=regex -DLIMIT=s -P expect_stop.cmake
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe ${PROGRAM} ${MODE}
  TIMEOUT ${LIMIT}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message("${output}")
message("mpirun ended with '${status}' after ${seconds} s")
if(status STREQUAL "0")
  message(FATAL_ERROR "the job succeeded although rank 1 stopped")
endif()
if(status MATCHES "timeout")
  message(FATAL_ERROR "the other rank still waited after ${LIMIT} s")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not say '${EXPECT}'")
endif()
