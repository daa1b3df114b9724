# zfetch_run_trace(OUT): runs `ZFETCH run SCENARIO --discovery POLICY --trace OUT`. Exit 1 (the
# scenario fails as simulated) is a normal outcome here; exit 2 or a missing trace is an error.
function(zfetch_run_trace out)
  file(REMOVE ${out})
  execute_process(COMMAND ${ZFETCH} run ${SCENARIO} --discovery ${POLICY} --trace ${out}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT (code STREQUAL "0" OR code STREQUAL "1") OR NOT EXISTS ${out})
    message(FATAL_ERROR "zfetch run ${SCENARIO} --discovery ${POLICY} failed (${code}):\n${err}")
  endif()
endfunction()
