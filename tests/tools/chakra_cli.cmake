# zfetch run --chakra DIR from the command line: one file per rank in a directory it creates,
# the same bytes from the same run, exit 2 (and nothing left behind) when DIR cannot be used.
# Without protobuf (HAVE_CHAKRA false) --chakra must exit 2 and name what is missing.
set(scenario scenarios/seed/resident_adapter_resume.yaml)  # world_size 2
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run_chakra dir)
  execute_process(COMMAND ${ZFETCH} run ${scenario} --chakra ${dir}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  set(code ${code} PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

if(NOT HAVE_CHAKRA)
  run_chakra(${WORK}/out)
  if(NOT code EQUAL 2 OR NOT err MATCHES "protobuf" OR EXISTS ${WORK}/out)
    message(FATAL_ERROR "without protobuf: exit ${code} (expected 2)\n${err}")
  endif()
  return()
endif()

# The seed fails under the default policy (exit 1); its schedule up to the failure is written.
run_chakra(${WORK}/a)
if(NOT code EQUAL 1)
  message(FATAL_ERROR "exit ${code} (expected 1)\n${err}")
endif()
file(GLOB written RELATIVE ${WORK}/a ${WORK}/a/*)
list(SORT written)
if(NOT written STREQUAL "zfetch.0.et;zfetch.1.et")
  message(FATAL_ERROR "expected zfetch.0.et and zfetch.1.et, got '${written}'")
endif()
run_chakra(${WORK}/b)
foreach(rank 0 1)
  file(SIZE ${WORK}/a/zfetch.${rank}.et size)
  file(SHA256 ${WORK}/a/zfetch.${rank}.et first)
  file(SHA256 ${WORK}/b/zfetch.${rank}.et second)
  if(size LESS 100 OR NOT first STREQUAL second)
    message(FATAL_ERROR "zfetch.${rank}.et: ${size} bytes, not the same bytes twice")
  endif()
endforeach()

# A DIR that is a file, or whose parent does not exist: exit 2, the path named, nothing made.
file(WRITE ${WORK}/file "x")
run_chakra(${WORK}/file)
if(NOT code EQUAL 2 OR NOT err MATCHES "file: error: cannot write: exists and is not a directory")
  message(FATAL_ERROR "DIR is a file: exit ${code} (expected 2)\n${err}")
endif()
run_chakra(${WORK}/missing/out)
if(NOT code EQUAL 2 OR NOT err MATCHES "out: error: cannot write" OR EXISTS ${WORK}/missing)
  message(FATAL_ERROR "DIR without a parent: exit ${code} (expected 2)\n${err}")
endif()
# A failing run of another output leaves no directory behind: the scenario is also an output.
execute_process(COMMAND ${ZFETCH} run ${scenario} --chakra ${WORK}/d --trace ${scenario}
                RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT code EQUAL 2 OR EXISTS ${WORK}/d)
  message(FATAL_ERROR "--trace over the input: exit ${code} (expected 2), or ${WORK}/d left\n${err}")
endif()
