# Writes a ctest file with one test per GoogleTest suite of an executable (`Suite.*`), run as
#   cmake -D BINARY=... -D WORKING_DIR=... -D OUTPUT=... -D TIMEOUT=... -P gtest_suites.cmake
# after the executable is built. The sanitized suite uses it: a sanitized process costs about
# 0.07 s of CPU to start and end (shadow memory, the leak check), and one per suite instead of one
# per test saves a thousand of them.
execute_process(COMMAND "${BINARY}" --gtest_list_tests OUTPUT_VARIABLE listing
                ERROR_VARIABLE errors RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${status}):\n${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
set(suites 0)
foreach(line IN LISTS lines)
  # A suite's line starts in the first column and ends its name with a dot ("Suite." or
  # "Prefix/Suite/0.  # TypeParam = ..."); its tests' lines are indented.
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(name "${CMAKE_MATCH_1}.*")
    string(APPEND content
      "add_test([=[${name}]=] [==[${BINARY}]==] [==[--gtest_filter=${name}]==])\n"
      "set_tests_properties([=[${name}]=] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIR}]==] "
      "TIMEOUT ${TIMEOUT})\n")
    math(EXPR suites "${suites} + 1")
  endif()
endforeach()
if(suites EQUAL 0)
  message(FATAL_ERROR "${BINARY} lists no test suite:\n${listing}")
endif()
file(WRITE "${OUTPUT}" "${content}")
