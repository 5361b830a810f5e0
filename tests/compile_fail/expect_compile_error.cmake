# Compiles SOURCE (with -I for each of INCLUDES) and passes only if the compiler rejects it with a
# message that names the type and the library's constraint (GCC and Clang word it differently,
# but both name them):
#   cmake -DCOMPILER=g++ -DINCLUDES="a;b" -DSOURCE=file.cpp -P expect_compile_error.cmake
set(flags -std=c++20 -fsyntax-only)
foreach(dir IN LISTS INCLUDES)
  list(APPEND flags "-I${dir}")
endforeach()
execute_process(COMMAND ${COMPILER} ${flags} ${SOURCE} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(APPEND out "${err}")
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but its input type must be refused")
endif()
if(NOT out MATCHES "(input_type|reducible)" OR NOT out MATCHES "T = long double")
  message(FATAL_ERROR "the compiler refused ${SOURCE}, but not with the library's constraint naming the type:\n${out}")
endif()
message(STATUS "refused as expected: ${SOURCE}")
