# `zfetch explain` on the seed's real DeepSpeed message names issue #8874's mechanism and the
# parameter adapter.adapter_A.weight, and exits 0.
execute_process(COMMAND ${ZFETCH} explain ${INPUT} RESULT_VARIABLE code OUTPUT_VARIABLE out)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "exit code ${code}, expected 0")
endif()
foreach(want "issue #8874's mechanism" "An external access of a resident parameter"
        "adapter.adapter_A.weight (id 4): AVAILABLE, persistent")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the explanation lacks '${want}':\n${out}")
  endif()
endforeach()
