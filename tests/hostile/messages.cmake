# Class 7 (messages): a NUL byte, invalid UTF-8 or a tab where YAML forbids one is named as such
# at its line and column, in scenarios, ds_config, calibration and order files and traces; a
# trace is known by its content whatever it is called; an unreadable directory under `check
# DIR` is an error naming it; a long line is quoted around the column.
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
fresh_work_dir(messages)
set(model "model: {name: m, params: {w: [4, 4]}, children: [{name: a, params: {w: [16]}}]}\n")
find_program(PRINTF printf REQUIRED)
# write_bytes(FILE TEXT): TEXT through printf, so that \000 and \377 become the bytes.
function(write_bytes file text)
  execute_process(COMMAND ${PRINTF} "${text}" OUTPUT_FILE ${dir}/${file} RESULT_VARIABLE code)
  if(NOT code STREQUAL "0")
    message(FATAL_ERROR "printf failed for ${file}")
  endif()
endfunction()

# Scenarios: a NUL, a byte that is not UTF-8 (the quoted line shows it as '?'), a cut sequence.
write_bytes(nul.yaml "name: t\\nmodel: {name: m\\000}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 2 STDERR "nul.yaml:2:16: error: a NUL byte \\(zfetch reads UTF-8 text; is the file binary or UTF-16\\?\\)\nmodel: {name: m\\?}\n               \\^"
           COMMAND ${ZFETCH} validate ${dir}/nul.yaml)
write_bytes(latin1.yaml "name: caf\\351\\nmodel: {name: m}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 2 STDERR "latin1.yaml:1:10: error: invalid UTF-8 \\(byte 0xE9; zfetch reads UTF-8 text\\)"
           COMMAND ${ZFETCH} run ${dir}/latin1.yaml)
write_bytes(overlong.yaml "name: t\\nmodel: {name: \"\\300\\257\"}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 2 STDERR "overlong.yaml:2:16: error: invalid UTF-8 \\(byte 0xC0"
           COMMAND ${ZFETCH} validate ${dir}/overlong.yaml)
# Valid UTF-8 names load.
write_bytes(utf8.yaml "name: caf\\303\\251\\nmodel: {name: m\\342\\202\\254, params: {w: [4]}}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 0 STDERR "^$" COMMAND ${ZFETCH} validate ${dir}/utf8.yaml)
# A tab in the indentation, which YAML forbids: named at the tab.
write_bytes(tab.yaml "name: t\\nmodel:\\n  name: m\\n\\tparams: {w: [4]}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 2 STDERR "tab.yaml:4:1: error: a tab in the indentation: YAML indents with spaces only"
           COMMAND ${ZFETCH} validate ${dir}/tab.yaml)
# A tab inside a flow mapping is separation, which YAML allows.
write_bytes(tab_ok.yaml "name: t\\nmodel: {name: m,\\tparams: {w: [4]}}\\nschedule: [{train: 1}]\\n")
expect_run(CODE 0 STDERR "^$" COMMAND ${ZFETCH} validate ${dir}/tab_ok.yaml)

# A ds_config and a calibration file: the error is in that file, at the byte.
write_bytes(ds.json "{\\\"zero_optimization\\\": {\\\"stage\\\": 3},\\n \\\"wandb\\\": {\\\"project\\\": \\\"\\377\\\"}}\\n")
file(WRITE ${dir}/ds.yaml "name: t\ndeepspeed_config: ds.json\n${model}schedule: [{train: 1}]\n")
expect_run(CODE 2 STDERR "ds.json:2:24: error: invalid UTF-8 \\(byte 0xFF"
           COMMAND ${ZFETCH} validate ${dir}/ds.yaml)
write_bytes(cal.json "{\\\"format\\\": \\\"zfetch-calibration\\\", \\\"version\\\": 1,\\000}\\n")
file(WRITE ${dir}/cal.yaml "name: t\ntiming: {calibration: cal.json}\n${model}schedule: [{train: 1}]\n")
expect_run(CODE 2 STDERR "cal.json:1:47: error: a NUL byte"
           COMMAND ${ZFETCH} validate ${dir}/cal.yaml)

# Traces: the header decides, not the name.
execute_process(COMMAND ${ZFETCH} run ${SEED} --trace ${dir}/trace.data RESULT_VARIABLE code
                OUTPUT_QUIET)
expect_run(CODE 0 STDERR "^$" COMMAND ${ZFETCH} validate ${dir}/trace.data)
file(COPY_FILE ${dir}/trace.data ${dir}/expected.txt)
expect_run(CODE 0 STDERR "^$" COMMAND ${ZFETCH} diff ${dir}/trace.data ${dir}/expected.txt)
expect_run(CODE 2 STDERR "trace.data: error: this is a zfetch trace, not a scenario"
           COMMAND ${ZFETCH} run ${dir}/trace.data)
expect_run(CODE 2 STDERR "trace.data: error: this is a zfetch trace, not a scenario"
           COMMAND ${ZFETCH} check ${dir}/trace.data)
# An order file that is not UTF-8.
write_bytes(order.txt "fetch a\\nfetch \\377\\n")
expect_run(CODE 2 STDERR "order.txt:2:7: error: invalid UTF-8 \\(byte 0xFF"
           COMMAND ${ZFETCH} diff ${dir}/trace.data ${dir}/order.txt)
# A name in a trace that is not UTF-8 (every output that prints it would be invalid JSON).
file(STRINGS ${dir}/trace.data lines)
list(GET lines 0 header)
string(ASCII 255 bad_byte)
file(WRITE ${dir}/bad_name.jsonl "${header}\n{\"seq\":0,\"t_ns\":0,\"rank\":0,\"engine\":0,\"step\":0,\"micro_step\":0,\"phase\":\"none\",\"kind\":\"engine_init\",\"module_id\":0,\"module\":\"m${bad_byte}\"}\n")
expect_run(CODE 2 STDERR "bad_name.jsonl:2:124: error: malformed JSON: invalid UTF-8 \\(byte 0xFF"
           COMMAND ${ZFETCH} validate ${dir}/bad_name.jsonl)

# A 2000-byte line: the quote is the part around the column, cut marks on both sides.
string(REPEAT "x" 1000 pad)
file(WRITE ${dir}/long.yaml "name: t\ndeepspeed_config: long.json\n${model}schedule: [{train: 1}]\n")
file(WRITE ${dir}/long.json "{\"wandb\": {\"a\": \"${pad}\"}, \"zero_optimization\": {\"stage\": 2}, \"optimizer\": \"${pad}\"}\n")
string(REPEAT " " 83 caret_indent)
expect_run(CODE 2 STDERR "long.json:1:1053: error: zfetch simulates ZeRO stage 3, got stage 2\n\\.\\.\\.x+\"}, \"zero_optimization\": {\"stage\": 2}, \"optimizer\": \"x+\\.\\.\\.\n${caret_indent}\\^\n$"
           COMMAND ${ZFETCH} validate ${dir}/long.yaml)

# A directory that cannot be read under `check DIR`: an error naming it, exit 2, the readable
# scenarios still checked. Root reads any directory, so as root this part is skipped.
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(uid STREQUAL "0")
  message(STATUS "skipped the unreadable-directory case: running as root, which reads any directory")
else()
  file(MAKE_DIRECTORY ${dir}/tree/locked)
  file(COPY_FILE ${SEED} ${dir}/tree/seed.yaml)
  execute_process(COMMAND chmod 000 ${dir}/tree/locked)
  expect_run(CODE 2 STDERR "tree/locked: error: cannot read directory: Permission denied"
             COMMAND ${ZFETCH} check ${dir}/tree)
  execute_process(COMMAND chmod 700 ${dir}/tree/locked)
endif()

# `check DIR` with no scenario in it: a wrong path, not "0 passed, 0 failed" and exit 0.
file(MAKE_DIRECTORY ${dir}/empty_tree/sub)
file(WRITE ${dir}/empty_tree/notes.txt "not a scenario\n")
expect_run(CODE 2 STDERR "empty_tree: error: no scenario file \\(.yaml, .yml\\) in this directory"
           COMMAND ${ZFETCH} check ${dir}/empty_tree)

# An escape sequence in a name from the input (a YAML "\e" escape) is shown as '?' in the
# message, as in a quoted line: an error must not clear or recolour the terminal showing it.
file(WRITE ${dir}/escape.yaml "name: t\n\"\\e[2J\\e[31mevil\": 1\n${model}schedule: [{train: 1}]\n")
expect_run(CODE 2 STDERR "escape.yaml:2:1: error: unknown key '\\?.2J\\?.31mevil' in the scenario"
           COMMAND ${ZFETCH} validate ${dir}/escape.yaml)
execute_process(COMMAND ${ZFETCH} validate ${dir}/escape.yaml ERROR_VARIABLE err OUTPUT_QUIET)
string(ASCII 27 escape)
string(FIND "${err}" "${escape}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the error message holds an escape byte:\n${err}")
endif()
