# Class 8 (sweep values): every --set value is taken exactly or rejected naming the key and the
# expected type; a key given twice is an error; a failed cell makes the exit code say so.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

# sweep_case(CODE STDERR ARGS...): `zfetch sweep SEED ARGS...` exits CODE, stderr matching STDERR.
function(sweep_case code stderr)
  expect_run(CODE ${code} STDERR "${stderr}" COMMAND ${ZFETCH} sweep ${SEED} ${ARGN})
endfunction()

set(key stage3_param_persistence_threshold)
# Whole numbers in any decimal form are exact: 8e0 is 8, 1.6e1 is 16, 100_000e-4 is 10.
sweep_case(0 "^$" --set ${key}=0,8e0,100_000e-4)
# A fraction, an exponent that leaves one, a value beyond 64 bits, text: rejected before any run.
sweep_case(2 "command line: error: expected an integer for '${key}', got '1.5' \\(not a whole number\\)"
           --set ${key}=0,1.5)
sweep_case(2 "command line: error: expected an integer for '${key}', got '1e-5' \\(not a whole number\\)"
           --set ${key}=1e-5)
sweep_case(2 "command line: error: '1e19' for '${key}' is out of range: expected an integer of at most 9223372036854775807"
           --set ${key}=1e19)
sweep_case(2 "command line: error: expected an integer for '${key}', got 'true' \\(not a number\\)"
           --set ${key}=true)
sweep_case(2 "command line: error: expected an integer >= 1 for 'world_size', got '0'"
           --set world_size=0)
sweep_case(2 "command line: error: invalid value 'gpu' for 'offload_param.device'; valid values are: none, cpu, nvme"
           --set offload_param.device=gpu)
# A key given twice, also once with its zero_optimization. prefix.
sweep_case(2 "command line: error: '${key}' is given twice with --set"
           --set ${key}=0 --set ${key}=8)
sweep_case(2 "command line: error: 'zero_optimization.${key}' is given twice with --set"
           --set ${key}=0 --set zero_optimization.${key}=8)
# A failed cell (the adapter weights become persistent at 16): exit 1, 0 with --allow-fail, and
# the same for a bisection, whose reported cells include the failing side.
sweep_case(1 "^$" --set ${key}=0,16)
sweep_case(1 "^$" --set ${key}=0,16 --require-pass)
sweep_case(0 "^$" --set ${key}=0,16 --allow-fail)
sweep_case(1 "^$" --bisect ${key}=0..100)
sweep_case(0 "^$" --bisect ${key}=0..100 --allow-fail)
sweep_case(2 "command line: error: --require-pass and --allow-fail exclude each other"
           --set ${key}=0 --require-pass --allow-fail)
