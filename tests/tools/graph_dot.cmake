# Runs `zfetch graph SCENARIO ARGS...` and renders it with `dot -Tpng`; both must exit 0.
# EXPECT: a regular expression the DOT text must match (an edge or a label).
# REJECT (optional): a regular expression it must not match.
# MAX_WIDTH (optional): the PNG must be narrower than this many pixels.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${ZFETCH} graph ${SCENARIO} ${args} RESULT_VARIABLE code
                OUTPUT_VARIABLE dot_text ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "zfetch graph exited ${code}, expected 0\n${err}")
endif()
if(NOT dot_text MATCHES "${EXPECT}")
  message(FATAL_ERROR "the DOT text does not match '${EXPECT}':\n${dot_text}")
endif()
if(REJECT AND dot_text MATCHES "${REJECT}")
  message(FATAL_ERROR "the DOT text matches '${REJECT}':\n${dot_text}")
endif()
# OUT_DIR is the build folder: a script run with -P has the source root as its current folder.
set(png ${OUT_DIR}/graph_${NAME}.png)
execute_process(COMMAND ${ZFETCH} graph ${SCENARIO} ${args} COMMAND ${DOT} -Tpng -o ${png}
                RESULTS_VARIABLE codes ERROR_VARIABLE err)
if(NOT codes STREQUAL "0;0")
  message(FATAL_ERROR "exit codes (zfetch graph; dot -Tpng) = ${codes}, expected 0;0\n${err}")
endif()
if(MAX_WIDTH)
  # PNG: 8-byte signature, IHDR length and type, then the width as a big-endian uint32.
  file(READ ${png} width_hex OFFSET 16 LIMIT 4 HEX)
  math(EXPR width "0x${width_hex}")
  if(NOT width LESS MAX_WIDTH)
    message(FATAL_ERROR "${png} is ${width} pixels wide, expected less than ${MAX_WIDTH}")
  endif()
  message(STATUS "${png}: ${width} pixels wide")
endif()
