# Class 3 (arithmetic): a number beyond double range in a ds_config or a calibration is a
# located error; times that would overflow 64 bits end in exit 2 with a message, never a
# wrapped-around figure with exit 0; every number that flows into arithmetic has a load-time
# limit (model/limits.h), its boundary accepted and one past it a located error.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(dir ${WORK}/arithmetic)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
set(model "model: {name: m, params: {w: [4, 4]}, children: [{name: a, params: {w: [16]}}]}\n")

# The libFuzzer finding: a ds_config number beyond double range.
file(WRITE ${dir}/ds.json
     "{\"zero_optimization\": {\"stage\": 3, \"stage3_prefetch_bucket_size\": 0.5e80001}}\n")
file(WRITE ${dir}/huge_number.yaml
     "name: huge-number\ndeepspeed_config: ds.json\n${model}schedule: [{train: 1}]\n")
expect_run(CODE 2 STDERR "ds.json:1:67: error: invalid ds_config: number out of range: 0.5e80001"
           COMMAND ${ZFETCH} validate ${dir}/huge_number.yaml)

# calibration_case(NAME SECTION STEPS CODE STDERR): runs a 2-rank scenario of STEPS steps
# whose calibration file NAME.json has the allgather section SECTION.
function(calibration_case name section steps code stderr)
  file(WRITE ${dir}/${name}.json "{\"format\": \"zfetch-calibration\", \"version\": 1,\n\
 \"allgather\": ${section}, \"h2d\": {\"bandwidth_GBps\": 1}}\n")
  file(WRITE ${dir}/${name}.yaml "name: ${name}\nworld_size: 2\n\
timing: {calibration: ${name}.json}\n${model}schedule: [{train: ${steps}}]\n")
  expect_run(CODE ${code} STDERR "${stderr}" COMMAND ${ZFETCH} run ${dir}/${name}.yaml)
endfunction()
# A calibration number beyond double range.
calibration_case(cal_range "{\"alpha_ns\": 1e400, \"busbw_GBps\": 1}" 1 2
                 "cal_range.json:2:28: error: invalid JSON: number out of range: 1e400")
# The libFuzzer finding: valid but huge values (1e18 ns per collective): the run's time does
# not fit in 64 bits.
calibration_case(cal_huge "{\"alpha_ns\": 1e18, \"busbw_GBps\": 1e9}" 20 2
                 "cal_huge.yaml: error: the simulated times or byte counts exceed 64 bits")
# A key given twice (nlohmann-json keeps the last one silently): located at the second.
calibration_case(cal_dup "{\"alpha_ns\": 1, \"busbw_GBps\": 1, \"x\": {\"alpha_ns\": 2}, \"alpha_ns\": 1e9}" 1 2
                 "cal_dup.json:2:70: error: invalid JSON: duplicate key 'alpha_ns'")
# A bandwidth whose bytes/s would not fit in 64 bits.
calibration_case(cal_bw "{\"alpha_ns\": 1, \"busbw_GBps\": 1e17}" 1 2
                 "cal_bw.json:2:31: error: expected a number between 0 and 1e9 for 'allgather.busbw_GBps'")

# The load-time limits of model/limits.h: each boundary runs (with the largest values together,
# so their products are exercised), one past it is a located error; --set checks the same limits.
# limit_case(NAME CODE STDERR HEAD MODEL): runs a 2-step scenario with HEAD and MODEL.
function(limit_case name code stderr head model_text)
  file(WRITE ${dir}/${name}.yaml "name: ${name}\n${head}\n${model_text}\nschedule: [{train: 2}]\n")
  expect_run(CODE ${code} STDERR "${stderr}" COMMAND ${ZFETCH} run ${dir}/${name}.yaml)
endfunction()
# 256 parameters of 2^40 elements: 2^48 in all, the model limit; one element more is too many.
set(layers "")
foreach(i RANGE 254)
  string(APPEND layers "{name: l${i}, params: {w: [1099511627776]}}, ")
endforeach()
set(at_limit "model: {name: m, compute_us: 1000000000000, children: [${layers}{name: last, params: {w: [1099511627776]}}]}")
set(past_limit "model: {name: m, children: [${layers}{name: last, params: {w: [1099511627776]}}, {name: x, params: {w: [1]}}]}")
limit_case(limits_max 0 "^$"
           "world_size: 1048576\ntiming: {tokens_per_micro_batch: 2147483648}\ndeepspeed: {train_micro_batch_size_per_gpu: 2147483648, zero_optimization: {stage: 3}}"
           "${at_limit}")
limit_case(model_numel 2 "model_numel.yaml:3:[0-9]+: error: the model's parameters hold more than 281474976710656 \\(2\\^48\\) elements in all once 'x.w' is added"
           "world_size: 2" "${past_limit}")
limit_case(world_size 2 "world_size.yaml:2:13: error: 'world_size' must be at most 1048576 \\(zfetch's limit\\), got 1048577"
           "world_size: 1048577" "${model}")
limit_case(tokens 2 "tokens.yaml:2:34: error: 'tokens_per_micro_batch' must be at most 2147483648 \\(zfetch's limit\\), got 2147483649"
           "timing: {tokens_per_micro_batch: 2147483649}" "${model}")
limit_case(micro_batch 2 "micro_batch.yaml:2:45: error: 'train_micro_batch_size_per_gpu' must be at most 2147483648 \\(zfetch's limit\\), got 2147483649"
           "deepspeed: {train_micro_batch_size_per_gpu: 2147483649, zero_optimization: {stage: 3}}" "${model}")
limit_case(compute 2 "compute.yaml:3:[0-9]+: error: 'compute_us' must be at most 1000000000000 \\(zfetch's limit\\), got 1000000000001"
           "world_size: 2" "model: {name: m, compute_us: 1000000000001, params: {w: [4]}}")
limit_case(param_numel 2 "param_numel.yaml:3:[0-9]+: error: parameter 'w' has too many elements; at most 1099511627776"
           "world_size: 2" "model: {name: m, params: {w: [1099511627777]}}")
expect_run(CODE 2 STDERR "command line: error: --set 'world_size=1048577': expected an integer <= 1048576 for 'world_size' \\(zfetch's limit\\)"
           COMMAND ${ZFETCH} run ${SEED} --set world_size=1048577)
