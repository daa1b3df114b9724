# Class 6 (output safety): an output never replaces an input or another output; outputs are
# written whole or not at all; a failed write, stdout included, is never reported as success.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(dir ${WORK}/output_safety)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
set(scenario ${dir}/seed.yaml)
file(COPY_FILE ${SEED} ${scenario})
file(SHA256 ${scenario} before)

# --trace or --timeline naming the scenario (directly or through a symlink): exit 2, untouched.
expect_run(CODE 2 STDERR "seed.yaml: error: refusing to overwrite the input '.*seed.yaml' with an output"
           COMMAND ${ZFETCH} run ${scenario} --trace ${scenario})
file(CREATE_LINK ${scenario} ${dir}/link.yaml SYMBOLIC)
expect_run(CODE 2 STDERR "link.yaml: error: refusing to overwrite the input"
           COMMAND ${ZFETCH} run ${scenario} --timeline ${dir}/link.yaml)
file(SHA256 ${scenario} after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "the scenario changed")
endif()
# Two outputs naming one file.
expect_run(CODE 2 STDERR "error: two outputs name the same file"
           COMMAND ${ZFETCH} run ${scenario} --trace ${dir}/x.json --timeline ${dir}/x.json)

# One output fails (/dev/full): the other is not written and the message says so.
file(WRITE ${dir}/old.jsonl "previous content\n")
expect_run(CODE 2 STDERR "/dev/full: error: cannot write: .*old.jsonl: note: not written because of that failure \\(left as it was\\)"
           COMMAND ${ZFETCH} run ${scenario} --trace ${dir}/old.jsonl --timeline /dev/full)
file(READ ${dir}/old.jsonl kept)
if(NOT kept STREQUAL "previous content\n")
  message(FATAL_ERROR "old.jsonl was changed by a failed run")
endif()
file(GLOB leftovers ${dir}/*.tmp.*)
if(leftovers)
  message(FATAL_ERROR "temporary files left behind: ${leftovers}")
endif()

# A successful run replaces the old file whole.
expect_run(CODE 1 STDERR "^$" COMMAND ${ZFETCH} run ${scenario} --trace ${dir}/old.jsonl)
file(STRINGS ${dir}/old.jsonl first LIMIT_COUNT 1)
if(NOT first MATCHES "zfetch-trace")
  message(FATAL_ERROR "old.jsonl was not replaced by the trace: ${first}")
endif()

# stdout on a full device: every command that prints exits non-zero and says why.
foreach(command "run" "validate" "check" "graph")
  expect_run(CODE 2 STDERR "cannot write to stdout" STDOUT_FILE /dev/full
             COMMAND ${ZFETCH} ${command} ${scenario})
endforeach()
expect_run(CODE 2 STDERR "cannot write to stdout" STDOUT_FILE /dev/full
           COMMAND ${ZFETCH} sweep ${scenario} --set stage3_max_reuse_distance=0,1)
