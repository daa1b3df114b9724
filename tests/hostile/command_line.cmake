# Class 10 (command line): a number option takes exactly a decimal number in its range (CLI11
# alone read --max-events -1 as 2^64 - 1, no bound at all, 017 as octal 15, and let --runs 0
# run forever); every command-line error reads `command line: error: ...`; --help and
# --version on a full device exit 2, as every other output does.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
# option_case(CODE STDERR ARGS...): `zfetch ARGS...` exits CODE, stderr matching STDERR.
function(option_case code stderr)
  expect_run(CODE ${code} STDERR "${stderr}" COMMAND ${ZFETCH} ${ARGN})
endfunction()
set(range "expected a decimal integer from 0 to 18446744073709551615")
option_case(2 "^command line: error: --max-events: ${range}, got '-1'\nRun with --help for more information.\n$"
            run ${SEED} --max-events -1)
option_case(2 "^command line: error: --max-events: ${range}, got '017'" run ${SEED} --max-events 017)
option_case(2 "^command line: error: --max-events: ${range}, got '0x10'" check ${SEED} --max-events 0x10)
option_case(2 "^command line: error: --context: ${range}, got '18446744073709551616'"
            diff ${SEED} ${SEED} --context 18446744073709551616)
option_case(2 "^command line: error: --runs: expected a decimal integer from 1 to 18446744073709551615, got '0'"
            fuzz --runs 0)
option_case(2 "^command line: error: --jobs: expected a decimal integer from 1 to 1024, got '-1'"
            fuzz --jobs -1)
option_case(2 "^command line: error: --time: expected a number of seconds greater than 0, got 'inf'"
            fuzz --time inf)
option_case(2 "^command line: error: The following argument was not expected: --bogus" run ${SEED} --bogus)
option_case(2 "^command line: error: --runs: At Most 1 required but received 2" fuzz --runs 5 --runs 6)
option_case(0 "^$" fuzz --runs 3 --seed 18446744073709551615)
foreach(flag --help --version)
  expect_run(CODE 2 STDERR "cannot write to stdout" STDOUT_FILE /dev/full COMMAND ${ZFETCH} ${flag})
endforeach()
