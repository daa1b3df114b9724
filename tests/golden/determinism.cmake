# Simulates SCENARIO under POLICY twice; the traces must be byte-identical, and their SHA-256
# must be the one MANIFEST lists for "SCENARIO POLICY". ZFETCH_BLESS=1 rewrites that line.
include(${CMAKE_CURRENT_LIST_DIR}/run_trace.cmake)
file(MAKE_DIRECTORY ${WORK})
zfetch_run_trace(${WORK}/first.jsonl)
zfetch_run_trace(${WORK}/second.jsonl)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/first.jsonl ${WORK}/second.jsonl
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "${SCENARIO} --discovery ${POLICY}: two runs wrote different traces "
                      "(${WORK}/first.jsonl, ${WORK}/second.jsonl)")
endif()
file(SHA256 ${WORK}/first.jsonl digest)
set(key "${SCENARIO} ${POLICY}")

# Tests run in parallel: the manifest is read and rewritten under a lock.
get_filename_component(work_parent ${WORK} DIRECTORY)
file(LOCK ${work_parent}/trace_digests.lock GUARD PROCESS)
set(entries)
if(EXISTS ${MANIFEST})
  file(STRINGS ${MANIFEST} entries)
endif()
set(found "")
foreach(entry ${entries})
  string(FIND "${entry}" "${key} " at)
  if(at EQUAL 0)
    string(LENGTH "${key} " prefix)
    string(SUBSTRING "${entry}" ${prefix} -1 found)
  endif()
endforeach()

if(DEFINED ENV{ZFETCH_BLESS})
  string(REPLACE "." "[.]" escaped "${key} ")
  list(FILTER entries EXCLUDE REGEX "^${escaped}")
  list(APPEND entries "${key} ${digest}")
  list(SORT entries)
  list(JOIN entries "\n" text)
  file(WRITE ${MANIFEST} "${text}\n")
  message(STATUS "blessed ${key} ${digest}")
  return()
endif()
if(found STREQUAL "")
  message(FATAL_ERROR "no digest for '${key}' in ${MANIFEST}: a new scenario or policy; check "
                      "its trace, then run `ZFETCH_BLESS=1 ctest -L golden` to add it")
endif()
if(NOT found STREQUAL digest)
  message(FATAL_ERROR "${SCENARIO} --discovery ${POLICY}: trace SHA-256 ${digest} differs from "
                      "the manifest's ${found} (${WORK}/first.jsonl; ZFETCH_BLESS=1 rewrites the "
                      "manifest once the new trace is checked)")
endif()
