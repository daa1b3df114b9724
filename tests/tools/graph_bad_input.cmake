# Runs `zfetch graph SCENARIO` on a bad scenario: it must exit 2, print nothing on stdout, and
# print exactly EXPECTED_STDERR on stderr.
execute_process(COMMAND ${ZFETCH} graph ${SCENARIO}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${EXPECTED_STDERR} want_err)
if(NOT code EQUAL 2 OR NOT out STREQUAL "" OR NOT err STREQUAL want_err)
  message(FATAL_ERROR "exit ${code} (expected 2)\n--- stdout\n${out}\n--- stderr\n${err}"
                      "\n--- expected stderr\n${want_err}")
endif()
