# Runs `zfetch ARGS` (a ;-list) in DIR and compares its stdout and stderr, merged, with
# EXPECTED.out and the exit code with EXPECTED.exit. ZFETCH_BLESS=1 in the environment rewrites both.
# With STDERR_ONLY, stdout is not compared (a `zfetch run` report that other changes may move).
include(${CMAKE_CURRENT_LIST_DIR}/../golden_files.cmake)
if(STDERR_ONLY)
  execute_process(COMMAND ${ZFETCH} ${ARGS} WORKING_DIRECTORY ${DIR}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE out)
else()
  execute_process(COMMAND ${ZFETCH} ${ARGS} WORKING_DIRECTORY ${DIR}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
golden_files(EXPECTED ${EXPECTED} CODE "${code}" FILES out=out)
