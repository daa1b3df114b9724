# Class 4 (work bounds): step counts and nested repeats that ask for more work than a machine
# has stop at the --max-events bound with exit 2 and a message naming the option; no output
# file is left behind. The bound is checked twice: on the operations the scenario plans, before
# anything runs, and on the events as they are simulated.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(dir ${WORK}/work_bounds)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
set(model "model:\n  name: m\n  children:\n    - {name: a, params: {w: [8, 8]}}\n")
file(WRITE ${dir}/steps.yaml "name: many-steps\n${model}schedule:\n  - train: {steps: 1000000000}\n")
expect_run(CODE 2 STDERR "steps.yaml: error: the schedule asks for 6000000000 module operations, more than the --max-events bound of 50000000"
           COMMAND ${ZFETCH} run ${dir}/steps.yaml --trace ${dir}/steps.jsonl)
if(EXISTS ${dir}/steps.jsonl)
  message(FATAL_ERROR "a stopped run left its trace")
endif()
file(WRITE ${dir}/repeats.yaml "name: nested-repeats\nmodel:\n  name: m\n  params: {w: [2, 2]}\n  forward:\n    - repeat: 100000\n      body:\n        - repeat: 100000\n          body: [{access: w}]\nschedule: [train: 1]\nexpect:\n  resident-skip: {outcome: pass}\n")
expect_run(CODE 2 STDERR "repeats.yaml: error: the schedule asks for [0-9]+ module operations, more than the --max-events bound"
           COMMAND ${ZFETCH} check ${dir}/repeats.yaml)
# The bound is the option's value, checked again on the events as they are simulated (the
# seed plans 416 operations and emits more events than that); work under it runs.
expect_run(CODE 2 STDERR "error: the schedule asks for 416 module operations, more than the --max-events bound of 100"
           COMMAND ${ZFETCH} run ${SEED} --max-events 100)
expect_run(CODE 2 STDERR "error: the run needs more than 420 simulated events \\(the --max-events bound\\)"
           COMMAND ${ZFETCH} run ${SEED} --max-events 420)
expect_run(CODE 1 STDERR "^$" COMMAND ${ZFETCH} run ${SEED} --max-events 100000)
# sweep and graph --show-failure simulate too, under the same bound (they had none: a sweep of
# 10^9 steps ran forever); a sweep cell past the event bound is an error cell (exit 2), and a
# grid of more cells than a sweep runs is refused before anything runs.
expect_run(CODE 2 STDERR "steps.yaml: error: the schedule asks for 6000000000 module operations, more than the --max-events bound of 50000000"
           COMMAND ${ZFETCH} sweep ${dir}/steps.yaml --set world_size=1,2)
expect_run(CODE 2 STDERR "steps.yaml: error: the schedule asks for 6000000000 module operations"
           COMMAND ${ZFETCH} graph ${dir}/steps.yaml --show-failure)
expect_run(CODE 2 STDERR "error: the run needs more than 420 simulated events \\(the --max-events bound\\)"
           COMMAND ${ZFETCH} graph ${SEED} --show-failure --max-events 420)
expect_run(CODE 2 STDERR "^$" STDOUT_FILE ${dir}/cells.txt
           COMMAND ${ZFETCH} sweep ${SEED} --set stage3_max_reuse_distance=0,1 --max-events 420)
file(READ ${dir}/cells.txt cells)
if(NOT cells MATCHES "error: the run needs more than 420 simulated events")
  message(FATAL_ERROR "the bounded cell does not say why:\n${cells}")
endif()
string(REPEAT "0," 99 values)
expect_run(CODE 2 STDERR "command line: error: the --set values combine to more than 100000 cells"
           COMMAND ${ZFETCH} sweep ${SEED} --set stage3_max_reuse_distance=${values}0
                   --set stage3_prefetch_bucket_size=${values}0 --set stage3_max_live_parameters=${values}0)
