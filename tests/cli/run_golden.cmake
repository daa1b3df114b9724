# Runs `zfetch validate INPUT` and compares stderr with EXPECTED.stderr and the exit code with
# EXPECTED.exit (2 when absent). ZFETCH_BLESS=1 in the environment rewrites both.
include(${CMAKE_CURRENT_LIST_DIR}/../golden_files.cmake)
execute_process(COMMAND ${ZFETCH} validate ${INPUT}
                RESULT_VARIABLE code ERROR_VARIABLE err OUTPUT_QUIET)
golden_files(EXPECTED ${EXPECTED} CODE "${code}" DEFAULT_EXIT 2 FILES stderr=err)
