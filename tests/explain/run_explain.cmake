# Runs `zfetch explain INPUT`; compares stdout, stderr and the exit code with EXPECTED.out,
# EXPECTED.stderr and EXPECTED.exit. ZFETCH_BLESS=1 in the environment rewrites them.
include(${CMAKE_CURRENT_LIST_DIR}/../golden_files.cmake)
execute_process(COMMAND ${ZFETCH} explain ${INPUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
golden_files(EXPECTED ${EXPECTED} CODE "${code}" FILES out=out stderr=err)
