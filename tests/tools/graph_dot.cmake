# Runs `zfetch graph SCENARIO | dot -Tsvg -o /dev/null`; both must exit 0, and the DOT text
# must contain EXPECT (a qualified module name).
execute_process(COMMAND ${ZFETCH} graph ${SCENARIO} COMMAND ${DOT} -Tsvg -o /dev/null
                RESULTS_VARIABLE codes ERROR_VARIABLE err)
if(NOT codes STREQUAL "0;0")
  message(FATAL_ERROR "exit codes (zfetch graph; dot) = ${codes}, expected 0;0\n${err}")
endif()
execute_process(COMMAND ${ZFETCH} graph ${SCENARIO} RESULT_VARIABLE code OUTPUT_VARIABLE dot_text)
string(FIND "${dot_text}" "\"${EXPECT}" at)
if(NOT code EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "zfetch graph exited ${code}; its DOT does not name '${EXPECT}':\n${dot_text}")
endif()
