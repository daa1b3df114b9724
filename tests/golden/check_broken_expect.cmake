# `zfetch check` over a folder must fail when one expect block is wrong: a copy of the seed whose
# resident-skip block expects trace step 7 (DeepSpeed fails at step 6) exits 1 and says where.
# -DZFETCH=... -DSCENARIO=scenarios/seed/resident_adapter_resume.yaml -DWORK=<scratch folder>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(READ ${SCENARIO} text)
string(REPLACE "\n    step: 6\n" "\n    step: 7\n" broken "${text}")
if(broken STREQUAL text)
  message(FATAL_ERROR "${SCENARIO} no longer expects step 6: update this test")
endif()
file(WRITE ${WORK}/seed_wrong_step.yaml "${broken}")

execute_process(COMMAND ${ZFETCH} check ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "zfetch check exited ${rc} on a wrong expect block, expected 1\n${out}${err}")
endif()
foreach(needle "FAIL ${WORK}/seed_wrong_step.yaml [resident-skip]" "step: expected 7, got 6"
               "1 passed, 1 failed")
  string(FIND "${out}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "zfetch check did not print '${needle}':\n${out}${err}")
  endif()
endforeach()
