# Class 2 (unbounded reads): a directory, /dev/zero, a FIFO without a writer and a file over
# the 64 MiB input limit are errors that say what the path is; none hangs or reads forever. A
# trace is streamed, so what bounds it is the length of a line.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(dir ${WORK}/input_files)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir}/a_directory.yaml)
expect_run(CODE 2 STDERR "a_directory.yaml: error: cannot read file: is a directory"
           COMMAND ${ZFETCH} validate ${dir}/a_directory.yaml)
expect_run(CODE 2 STDERR "a_directory.yaml: error: cannot read file: is a directory"
           COMMAND ${ZFETCH} run ${dir}/a_directory.yaml)
file(MAKE_DIRECTORY ${dir}/traces.jsonl)
expect_run(CODE 2 STDERR "traces.jsonl: error: cannot read file: is a directory"
           COMMAND ${ZFETCH} validate ${dir}/traces.jsonl)
expect_run(CODE 2 STDERR "/dev/zero: error: cannot read file: is larger than the 64 MiB limit for input files"
           COMMAND ${ZFETCH} validate /dev/zero)
# A ds_config that names /dev/zero: located at the deepspeed_config value.
file(WRITE ${dir}/zero_config.yaml
     "name: zero-config\ndeepspeed_config: /dev/zero\nmodel: {name: m}\nschedule: [train: 1]\n")
expect_run(CODE 2 STDERR "zero_config.yaml:2:19: error: cannot read ds_config file '/dev/zero': is larger than the 64 MiB limit"
           COMMAND ${ZFETCH} validate ${dir}/zero_config.yaml)
# A calibration that is a directory.
file(MAKE_DIRECTORY ${dir}/cal.json)
file(WRITE ${dir}/dir_calibration.yaml
     "name: dir-calibration\ntiming: {calibration: cal.json}\nmodel: {name: m}\nschedule: [train: 1]\n")
expect_run(CODE 2 STDERR "cal.json: error: cannot read calibration file: is a directory"
           COMMAND ${ZFETCH} run ${dir}/dir_calibration.yaml)
# A FIFO that nobody writes reads as empty instead of blocking.
find_program(MKFIFO mkfifo)
if(MKFIFO)
  execute_process(COMMAND ${MKFIFO} ${dir}/fifo.yaml)
  expect_run(CODE 2 STDERR "fifo.yaml: error: the scenario file is empty"
             COMMAND ${ZFETCH} validate ${dir}/fifo.yaml)
endif()
# A regular file over the limit (sparse: no disk is used) is refused before it is read.
file(WRITE ${dir}/huge.yaml "name: huge\n")
file(SIZE ${dir}/huge.yaml size)
execute_process(COMMAND truncate -s 65M ${dir}/huge.yaml RESULT_VARIABLE truncated)
if(truncated EQUAL 0)
  expect_run(CODE 2 STDERR "huge.yaml: error: cannot read file: is larger than the 64 MiB limit"
             COMMAND ${ZFETCH} validate ${dir}/huge.yaml)
endif()
# An order file is read as scenarios are: /dev/zero and a directory are errors, not endless reads.
expect_run(CODE 2 STDERR "/dev/zero: error: cannot read file: is larger than the 64 MiB limit for input files"
           COMMAND ${ZFETCH} run ${SEED} --expect-order /dev/zero)
file(MAKE_DIRECTORY ${dir}/order.txt)
expect_run(CODE 2 STDERR "order.txt: error: cannot read file: is a directory"
           COMMAND ${ZFETCH} run ${SEED} --expect-order ${dir}/order.txt)

# A trace read as a stream (diff's recorded side) that never ends a line: /dev/zero stops at the
# line limit instead of buffering forever; so does a regular file (mapped), sparse past its
# header.
execute_process(COMMAND ${ZFETCH} run ${SEED} --trace ${dir}/seed.jsonl OUTPUT_QUIET)
expect_run(CODE 2 STDERR "^/dev/zero:1: error: a line longer than 64 MiB \\(a trace has one short JSON object a line: is this a trace\\?\\)"
           COMMAND ${ZFETCH} diff /dev/zero ${dir}/seed.jsonl)
file(STRINGS ${dir}/seed.jsonl header LIMIT_COUNT 1)
file(WRITE ${dir}/long_line.jsonl "${header}\n")
execute_process(COMMAND truncate -s 65M ${dir}/long_line.jsonl RESULT_VARIABLE truncated)
if(truncated EQUAL 0)
  expect_run(CODE 2 STDERR "long_line.jsonl:2: error: a line longer than 64 MiB"
             COMMAND ${ZFETCH} diff ${dir}/long_line.jsonl ${dir}/seed.jsonl)
endif()

# explain reads its input as every other input file (a directory, /dev/zero: errors), searches
# a pasted log in linear time (a line over 1 MiB is skipped, the message after it still found) and
# explains at most 1000 messages, saying where it stopped.
expect_run(CODE 2 STDERR "^/dev/zero: error: cannot read file: is larger than the 64 MiB limit for input files"
           COMMAND ${ZFETCH} explain /dev/zero)
expect_run(CODE 2 STDERR "a_directory.yaml: error: cannot read file: is a directory"
           COMMAND ${ZFETCH} explain ${dir}/a_directory.yaml)
set(message "RuntimeError: active_backward_submodules is empty during backward pass\n")
string(REPEAT "tracing error at step 1 " 43700 long_line)
file(WRITE ${dir}/long_log.txt "${long_line}\n${message}")
expect_run(CODE 0 STDERR "^$" STDOUT_FILE ${dir}/long_log.out COMMAND ${ZFETCH} explain ${dir}/long_log.txt)
file(READ ${dir}/long_log.out explained)
if(NOT explained MATCHES "^\\[1\\] line 2: ")
  message(FATAL_ERROR "the message after the long line is not the first explained:\n${explained}")
endif()
string(REPEAT "${message}" 1001 many)
file(WRITE ${dir}/many_messages.txt "${many}")
expect_run(CODE 0 STDERR "many_messages.txt:1001: note: explaining the first 1000 messages; the rest, from this line on, are left out"
           COMMAND ${ZFETCH} explain ${dir}/many_messages.txt)

# diff's expected side through a pipe (`<(zcat expected.jsonl.gz)`) is read whole and known by
# its text: a trace there was taken for an order file ("no directive found").
# The pipe is the command's stdin, as `<(...)` hands one over: its writer is there before zfetch
# opens it (a named FIFO whose writer comes later could be opened first, and read as empty).
expect_run(CODE 0 STDERR "^$" COMMAND sh -c "cat '${dir}/seed.jsonl' | exec '${ZFETCH}' diff '${dir}/seed.jsonl' /dev/stdin")
# The same for validate: a trace through a pipe is validated as a trace, not read as a scenario.
expect_run(CODE 0 STDERR "^$" COMMAND sh -c "cat '${dir}/seed.jsonl' | exec '${ZFETCH}' validate /dev/stdin")
