# Class 3 (arithmetic): a number beyond double range in a ds_config or a calibration is a
# located error; times that would overflow 64 bits end in exit 2 with a message, never a
# wrapped-around figure with exit 0; a world of 10^9 ranks allocates nothing per rank.
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
# A bandwidth whose bytes/s would not fit in 64 bits.
calibration_case(cal_bw "{\"alpha_ns\": 1, \"busbw_GBps\": 1e17}" 1 2
                 "cal_bw.json:2:31: error: expected a number between 0 and 1e9 for 'allgather.busbw_GBps'")

# A world of 10^9 ranks: nothing is sized by world_size (a table of 10^9 ranks would need
# gigabytes), so the run passes within the 30 s limit.
file(WRITE ${dir}/big_world.yaml "name: big-world\nworld_size: 1000000000\n${model}schedule: [{train: 2}]\n")
expect_run(CODE 0 STDERR "^$" COMMAND ${ZFETCH} run ${dir}/big_world.yaml)
