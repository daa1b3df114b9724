# expect_run(CODE <exit code> STDERR <regex> [STDOUT_FILE <path>] COMMAND <args...>): runs the
# command and fails the test unless the exit code is CODE and stderr matches STDERR.
function(expect_run)
  cmake_parse_arguments(ARG "" "CODE;STDERR;STDOUT_FILE" "COMMAND" ${ARGN})
  if(ARG_STDOUT_FILE)
    execute_process(COMMAND ${ARG_COMMAND} RESULT_VARIABLE code ERROR_VARIABLE err
                    OUTPUT_FILE ${ARG_STDOUT_FILE} TIMEOUT 30)
  else()
    execute_process(COMMAND ${ARG_COMMAND} RESULT_VARIABLE code ERROR_VARIABLE err OUTPUT_QUIET
                    TIMEOUT 30)
  endif()
  if(NOT code STREQUAL ARG_CODE)
    message(FATAL_ERROR "${ARG_COMMAND}: exit code '${code}', expected ${ARG_CODE}\nstderr:\n${err}")
  endif()
  if(NOT err MATCHES "${ARG_STDERR}")
    message(FATAL_ERROR "${ARG_COMMAND}: stderr does not match '${ARG_STDERR}':\n${err}")
  endif()
endfunction()

# fresh_work_dir(NAME): sets `dir` to an empty ${WORK}/NAME for the script's generated inputs.
macro(fresh_work_dir name)
  set(dir ${WORK}/${name})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
endmacro()
