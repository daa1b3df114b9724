# Warning flags shared by every zfetch target; warnings are errors unless ZFETCH_WERROR is off.
set(ZFETCH_CXX_WARNINGS
    -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast
    -Wundef -Wnon-virtual-dtor -Woverloaded-virtual -Wimplicit-fallthrough)
# GCC 12 at -O3 reports false positives inside Boost.Graph and libstdc++ (maybe-uninitialized on
# boost::optional, stringop-overflow on vector copies, restrict on std::string concatenation);
# they are not about our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND ZFETCH_CXX_WARNINGS -Wno-maybe-uninitialized -Wno-stringop-overflow -Wno-restrict)
endif()

# zfetch_warnings(target): applies the project's warnings to a C++ target.
function(zfetch_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${ZFETCH_CXX_WARNINGS}>)
  if(ZFETCH_WERROR)
    set_target_properties(${target} PROPERTIES COMPILE_WARNING_AS_ERROR ON)
  endif()
endfunction()
