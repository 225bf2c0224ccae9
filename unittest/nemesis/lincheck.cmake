# Included by unittest/nemesis/CMakeLists.txt once the checker library
# `nemesis_checker` (history.cc, linearizability*.cc) is defined: the
# checker's randomized test, tools/lincheck over a saved history, and the
# ctest that runs lincheck on saved histories (a violating one must exit 1).
add_executable(linearizability_random_test
               ${CMAKE_CURRENT_LIST_DIR}/linearizability_random_test.cc
               ${CMAKE_SOURCE_DIR}/unittest/support/tsan_suppressions.cc)
target_link_libraries(linearizability_random_test PRIVATE nemesis_checker GTest::gtest
                      GTest::gtest_main)
gtest_discover_tests(linearizability_random_test PROPERTIES LABELS checker DISCOVERY_TIMEOUT 60)

add_executable(lincheck ${CMAKE_SOURCE_DIR}/tools/lincheck.cc)
target_include_directories(lincheck PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(lincheck PRIVATE nemesis_checker gflags)
add_test(NAME lincheck_violation
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/lincheck_test.sh $<TARGET_FILE:lincheck>
                 ${CMAKE_CURRENT_LIST_DIR}/testdata)
set_tests_properties(lincheck_violation PROPERTIES LABELS checker TIMEOUT 60)
add_test(NAME help_lincheck
         COMMAND ${CMAKE_SOURCE_DIR}/scripts/check_program_help.sh $<TARGET_FILE:lincheck>)
set_tests_properties(help_lincheck PROPERTIES LABELS checker)
