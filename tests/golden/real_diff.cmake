# Simulates SCENARIO under POLICY and compares the trace recorded from real DeepSpeed (REAL) with
# it through `zfetch diff`, on the kinds and fields a recorder writes (docs/diff.md). Fails when
# they differ, and when no event was compared. DIFF_ARGS: extra options (e.g. --ignore-ids).
execute_process(COMMAND ${ZFETCH} run ${SCENARIO} --discovery ${POLICY} --trace ${WORK}.jsonl
                RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT code MATCHES "^[01]$")
  message(FATAL_ERROR "zfetch run exited ${code}\n${err}")
endif()
separate_arguments(extra UNIX_COMMAND "${DIFF_ARGS}")
execute_process(COMMAND ${ZFETCH} diff ${REAL} ${WORK}.jsonl --kinds recorded --rank 0 --fields
                        engine,step,micro_step,phase,kind,trace_step,module,param,status,numel,bytes
                        ${extra}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "zfetch diff exited ${code}\n${out}${err}")
endif()
if(NOT out MATCHES "equal \\(([0-9]+) events compared\\)" OR CMAKE_MATCH_1 EQUAL 0)
  message(FATAL_ERROR "zfetch diff compared no event\n${out}")
endif()
message(STATUS "${out}")
