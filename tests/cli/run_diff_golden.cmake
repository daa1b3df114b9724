# Runs `zfetch ARGS` (a ;-list) in DIR and compares its stdout and stderr, merged, with
# EXPECTED.out and the exit code with EXPECTED.exit. ZFETCH_BLESS=1 in the environment rewrites both.
# With STDERR_ONLY, stdout is not compared (a `zfetch run` report that other changes may move).
if(STDERR_ONLY)
  execute_process(COMMAND ${ZFETCH} ${ARGS} WORKING_DIRECTORY ${DIR}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE out)
else()
  execute_process(COMMAND ${ZFETCH} ${ARGS} WORKING_DIRECTORY ${DIR}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
if(DEFINED ENV{ZFETCH_BLESS})
  file(WRITE ${EXPECTED}.out "${out}")
  file(WRITE ${EXPECTED}.exit "${code}\n")
  return()
endif()
file(READ ${EXPECTED}.out want_out)
file(READ ${EXPECTED}.exit want_code)
string(STRIP "${want_code}" want_code)
if(NOT code STREQUAL want_code)
  message(FATAL_ERROR "exit code ${code}, expected ${want_code}\noutput:\n${out}")
endif()
if(NOT out STREQUAL want_out)
  message(FATAL_ERROR "output differs\n--- expected\n${want_out}\n--- actual\n${out}")
endif()
