# tools/check-layering on a tree that breaks a rule: a timeline header that includes the engine
# must fail (exit 1) and name the file, the line and both folders.
# -DCHECK=tools/check-layering -DDOC=docs/architecture.md -DWORK=<scratch folder>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/docs ${WORK}/sim/timeline ${WORK}/model)
file(COPY ${DOC} DESTINATION ${WORK}/docs)
file(WRITE ${WORK}/model/scenario.h "#pragma once\n")
file(WRITE ${WORK}/sim/simulator.h "#pragma once\n#include \"model/scenario.h\"\n")
file(WRITE ${WORK}/sim/timeline/broken.h "#pragma once\n\n#include \"model/scenario.h\"\n#include \"sim/simulator.h\"\n")

execute_process(COMMAND ${CHECK} --root ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(expected "sim/timeline/broken.h:4: error: sim/timeline/ may not include sim/ (\"sim/simulator.h\"; docs/architecture.md)\n")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "check-layering exited ${rc}, expected 1\n${out}${err}")
endif()
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "check-layering printed\n${out}${err}expected\n${expected}")
endif()

# The same tree without the broken include passes.
file(WRITE ${WORK}/sim/timeline/broken.h "#pragma once\n\n#include \"model/scenario.h\"\n")
execute_process(COMMAND ${CHECK} --root ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-layering failed a clean tree (exit ${rc})\n${out}${err}")
endif()
