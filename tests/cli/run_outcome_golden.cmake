# Runs `zfetch run ARGS...` and compares the outcome part of stdout (up to the simulated time,
# which the timeline owns) with EXPECTED.out, the exit code with EXPECTED.exit, and the JSON_KEY
# array (hazards, remedies) of `zfetch run --json ARGS...` with EXPECTED.json. ZFETCH_BLESS=1
# rewrites all three. LAST_STEP: the ranks diverge in that step, so the step table must stop
# there (no timing after it).
include(${CMAKE_CURRENT_LIST_DIR}/../golden_files.cmake)
execute_process(COMMAND ${ZFETCH} run ${ARGS}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED LAST_STEP)
  math(EXPR next "${LAST_STEP} + 1")
  if(NOT out MATCHES "\n# later steps and the run's totals left out: the ranks diverge in step ${LAST_STEP},"
     OR out MATCHES "\n +${next} +[0-9]+ ")
    message(FATAL_ERROR "the step table does not stop after step ${LAST_STEP}:\n${out}")
  endif()
endif()
string(FIND "${out}" "\nsimulated time" cut)
if(cut GREATER -1)
  string(SUBSTRING "${out}" 0 ${cut} out)
endif()
execute_process(COMMAND ${ZFETCH} run --json ${ARGS}
                RESULT_VARIABLE json_code OUTPUT_VARIABLE json_out)
string(JSON array ERROR_VARIABLE json_error GET "${json_out}" ${JSON_KEY})
if(json_error)
  message(FATAL_ERROR "zfetch run --json has no ${JSON_KEY} array: ${json_error}")
endif()
if(NOT json_code STREQUAL code)
  message(FATAL_ERROR "--json exits ${json_code}, text exits ${code}")
endif()
string(APPEND array "\n")
golden_files(EXPECTED ${EXPECTED} CODE "${code}" FILES out=out json=array)
