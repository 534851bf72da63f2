# Integration-test support for real xrootd servers (included from the top-level CMakeLists.txt
# inside its FERRY_BUILD_TESTS block, after ferry_testing is defined).
#
# ferry_tb_bindshim: LD_PRELOAD library that keeps test servers on 127.0.0.1
# (scripts/testbed/tools/bindshim.c; the test bed scripts compile the same file with cc).
# It is preloaded into /usr/bin/xrootd, so it is never built with sanitizers.
add_library(ferry_tb_bindshim MODULE ${PROJECT_SOURCE_DIR}/scripts/testbed/tools/bindshim.c)
target_link_libraries(ferry_tb_bindshim PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(ferry_tb_bindshim PRIVATE -fno-sanitize=all)
target_link_options(ferry_tb_bindshim PRIVATE -fno-sanitize=all)
set_target_properties(ferry_tb_bindshim PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
  OUTPUT_NAME ferry_tb_bindshim)

target_sources(ferry_testing PRIVATE ${PROJECT_SOURCE_DIR}/tests/testing/xrootd_server.cc)
target_compile_definitions(ferry_testing PRIVATE
  FERRY_TB_BINDSHIM="$<TARGET_FILE:ferry_tb_bindshim>"
  FERRY_TB_SCRIPTS_DIR="${PROJECT_SOURCE_DIR}/scripts/testbed")
add_dependencies(ferry_testing ferry_tb_bindshim)
