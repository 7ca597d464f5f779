# Writes a ctest file with one test per GoogleTest suite of an executable (`Suite.*`), run as
#   cmake -D BINARY=... -D WORKING_DIR=... -D OUTPUT=... -D TIMEOUT=... [-D ALONE=regex]
#         -P gtest_suites.cmake
# after the executable is built. The sanitized suite uses it: a sanitized process costs about
# 0.07 s of CPU to start and end (shadow memory, the leak check), and one per suite instead of one
# per test saves a thousand of them. A test whose full name matches ALONE still runs in a process
# of its own (and not in its suite's): one that counts the process's open descriptors, which
# another test's threads may open or close meanwhile.
execute_process(COMMAND "${BINARY}" --gtest_list_tests OUTPUT_VARIABLE listing
                ERROR_VARIABLE errors RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${status}):\n${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
set(suites "")
function(_gtest_suites_add name filter)
  set(content "${content}add_test([=[${name}]=] [==[${BINARY}]==] [==[--gtest_filter=${filter}]==])\n"
              "set_tests_properties([=[${name}]=] PROPERTIES WORKING_DIRECTORY "
              "[==[${WORKING_DIR}]==] TIMEOUT ${TIMEOUT})\n" PARENT_SCOPE)
endfunction()
set(suite "")
foreach(line IN LISTS lines)
  # A suite's line starts in the first column and ends its name with a dot ("Suite." or
  # "Prefix/Suite/0.  # TypeParam = ..."); its tests' lines are indented.
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(alone_${suite} "")
    set(others_${suite} FALSE)
  elseif(suite AND line MATCHES "^  ([A-Za-z0-9_/]+)")
    set(test "${suite}.${CMAKE_MATCH_1}")
    if(NOT ALONE OR NOT test MATCHES "${ALONE}")
      set(others_${suite} TRUE)
    else()
      _gtest_suites_add("${test}" "${test}")
      list(APPEND alone_${suite} "${test}")
    endif()
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${BINARY} lists no test suite:\n${listing}")
endif()
foreach(suite IN LISTS suites)
  if(NOT others_${suite})  # every test of it runs alone
    continue()
  endif()
  set(filter "${suite}.*")
  if(alone_${suite})
    list(JOIN alone_${suite} ":" excluded)
    string(APPEND filter "-${excluded}")
  endif()
  _gtest_suites_add("${suite}.*" "${filter}")
endforeach()
file(WRITE "${OUTPUT}" "${content}")
