# Class 9 (ds_config as DeepSpeed reads it): a deepspeed_config file is hjson, read as
# hjson-py reads it. What hjson accepts loads with the same meaning as the equivalent JSON; what
# it rejects, and a key given twice, is a located error; positions hold after a \u surrogate pair.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
fresh_work_dir(hjson_config)
set(model "model: {name: m, params: {w: [64, 64]}, children: [{name: a, params: {w: [256]}}, {name: b, params: {w: [512]}}]}\n")

# config_case(NAME TEXT): NAME.yaml runs 2 steps with the ds_config file NAME.json holding TEXT.
function(config_case name text)
  file(WRITE ${dir}/${name}.json "${text}")
  file(WRITE ${dir}/${name}.yaml
       "name: hjson\ndeepspeed_config: ${name}.json\n${model}schedule: [{train: 2}]\n")
endfunction()

# The same config as JSON and as hjson with every extension hjson-py accepts: the two runs
# print the same outcome, so each value was read with the same meaning.
config_case(strict [=[{"train_micro_batch_size_per_gpu": 2,
 "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 500000000,
  "stage3_param_persistence_threshold": 0, "overlap_comm": false},
 "wandb": {"project": "a, b # c"}}
]=])
config_case(relaxed [=[// DeepSpeed reads this file with hjson
# so comments of both kinds,
train_micro_batch_size_per_gpu: 2
zero_optimization: {
  /* unquoted keys, optional and trailing commas */ stage: 3
  stage3_prefetch_bucket_size: 5e8,
  stage3_param_persistence_threshold: 0.0, overlap_comm: false,
}
wandb: {
  project: '''
           a, b # c
           '''
}
]=])
foreach(name strict relaxed)
  execute_process(COMMAND ${ZFETCH} run --json ${dir}/${name}.yaml RESULT_VARIABLE code
                  OUTPUT_VARIABLE ${name}_out ERROR_VARIABLE err)
  if(NOT code STREQUAL "0")
    message(FATAL_ERROR "${name}.yaml: exit code '${code}'\n${err}")
  endif()
  string(REPLACE "${name}.yaml" "X.yaml" ${name}_out "${${name}_out}")
endforeach()
if(NOT strict_out STREQUAL relaxed_out)
  message(FATAL_ERROR "the hjson config means something else than the JSON one:\n"
                      "${strict_out}\n---\n${relaxed_out}")
endif()
if(NOT strict_out MATCHES "\"outcome\": \"pass\"")
  message(FATAL_ERROR "the JSON config does not pass:\n${strict_out}")
endif()

# A quoteless value runs to the end of its line, comma included (hjson's rule): a string.
config_case(quoteless "zero_optimization: {\n  stage: 3\n  stage3_max_live_parameters: 3 apples, stage: 3\n}\n")
expect_run(CODE 2 STDERR "quoteless.json:3:31: error: expected unsigned integer for 'stage3_max_live_parameters', got '3 apples, stage: 3'"
           COMMAND ${ZFETCH} validate ${dir}/quoteless.yaml)
# A key given twice in one object: DeepSpeed's error, at the second use, with a note at the first.
config_case(duplicate "{\"zero_optimization\": {\"stage\": 3,\n  \"overlap_comm\": true, \"stage\": 3}}\n")
expect_run(CODE 2 STDERR "duplicate.json:2:25: error: Duplicate keys in DeepSpeed config: \\['stage'\\]\n.*duplicate.json:1:24: note: first given here"
           COMMAND ${ZFETCH} validate ${dir}/duplicate.yaml)
# A \u surrogate pair is one character: the column after it still counts the bytes written.
config_case(surrogate "{\"wandb\": {\"project\": \"\\ud83d\\ude00\"}, \"zero_optimization\": {\"stage\": 2}}\n")
expect_run(CODE 2 STDERR "surrogate.json:1:71: error: zfetch simulates ZeRO stage 3, got stage 2"
           COMMAND ${ZFETCH} validate ${dir}/surrogate.yaml)
config_case(lone_surrogate "{\"wandb\": {\"project\": \"\\ud83d\"}}\n")
expect_run(CODE 2 STDERR "lone_surrogate.json:1:24: error: invalid ds_config: unpaired surrogate \\\\uD83D"
           COMMAND ${ZFETCH} validate ${dir}/lone_surrogate.yaml)
# What hjson-py rejects, located.
config_case(key_blank "{\n  zero optimization: {stage: 3}\n}\n")
expect_run(CODE 2 STDERR "key_blank.json:2:7: error: invalid ds_config: whitespace in a key"
           COMMAND ${ZFETCH} validate ${dir}/key_blank.yaml)
config_case(control "{\"zero_optimization\": {\"stage\": 3}, \"wandb\": {\"project\": \"a\tb\"}}\n")
expect_run(CODE 2 STDERR "control.json:1:60: error: invalid ds_config: control character U\\+0009 in a string"
           COMMAND ${ZFETCH} validate ${dir}/control.yaml)
config_case(no_colon "{\n  zero_optimization {stage: 3}\n}\n")
expect_run(CODE 2 STDERR "no_colon.json:2:21: error: invalid ds_config: '{' where a key was expected"
           COMMAND ${ZFETCH} validate ${dir}/no_colon.yaml)
config_case(comment "{\"zero_optimization\": {\"stage\": 3}}\n/* never closed\n")
expect_run(CODE 2 STDERR "comment.json:2:1: error: invalid ds_config: unterminated /\\* comment"
           COMMAND ${ZFETCH} validate ${dir}/comment.yaml)
config_case(extra "{\"zero_optimization\": {\"stage\": 3}}\n}\n")
expect_run(CODE 2 STDERR "extra.json:2:1: error: invalid ds_config: extra text after the document"
           COMMAND ${ZFETCH} validate ${dir}/extra.yaml)
config_case(unclosed "{\"zero_optimization\": {\"stage\": 3}\n")
expect_run(CODE 2 STDERR "unclosed.json:2:1: error: invalid ds_config: end of input where a key was expected"
           COMMAND ${ZFETCH} validate ${dir}/unclosed.yaml)
config_case(multiline "{wandb: {project: '''\n  never closed\n")
expect_run(CODE 2 STDERR "multiline.json:1:19: error: invalid ds_config: unterminated multi-line string"
           COMMAND ${ZFETCH} validate ${dir}/multiline.yaml)
# Nesting is bounded as in a scenario.
string(REPEAT "[" 300 open)
string(REPEAT "]" 300 close)
config_case(deep "{\"x\": ${open}${close}}\n")
expect_run(CODE 2 STDERR "deep.json:1:262: error: invalid ds_config: nesting deeper than 256 levels"
           COMMAND ${ZFETCH} validate ${dir}/deep.yaml)
# At most 10^5 keys and values: the 100001st is an error at its place (the file is read in well
# under a second either way).
string(REPEAT "0," 100000 zeros)
config_case(many "{\"zero_optimization\": {\"stage\": 3}, \"wandb\": [${zeros}]}\n")
expect_run(CODE 2 STDERR "many.json:1:200033: error: invalid ds_config: more than 100000 keys and values"
           COMMAND ${ZFETCH} validate ${dir}/many.yaml)
