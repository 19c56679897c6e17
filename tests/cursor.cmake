# Cursor polling source and backfill (issue 7).
sqlq_unit_test(keyset sqlq_sql)
sqlq_unit_test(cursor_query sqlq_sql)
sqlq_unit_test(cursor_column sqlq_sql)
sqlq_unit_test(cursor_pending sqlq_sql)
sqlq_unit_test(cursor_lag sqlq_sql)
sqlq_unit_test(watermark sqlq_sql)
# Internals of sql/cursor: their unit tests reach the folder.
foreach(t cursor_query cursor_column cursor_pending watermark)
  target_include_directories(test_${t} PRIVATE ${CMAKE_SOURCE_DIR}/sql/cursor)
endforeach()
sqlq_unit_test(backfill sqlq_sql)

sqlq_integration_test(cursor_source FIXTURES postgres LIBS sqlq_sql TIMEOUT 120)

# Two poller processes (tests/integration/cursor_poller.c) on one table: kill -9, SIGSTOP.
add_executable(cursor_poller integration/cursor_poller.c)
target_link_libraries(cursor_poller PRIVATE sqlq_bridge)
sqlq_integration_test(cursor_failover FIXTURES azurite postgres LIBS sqlq_bridge_testsupport
  TIMEOUT 240)
add_dependencies(itest_cursor_failover cursor_poller)
set_property(TEST integration.cursor_failover APPEND PROPERTY ENVIRONMENT
  "SQLQ_CURSOR_POLLER=$<TARGET_FILE:cursor_poller>")

sqlq_integration_test(backfill FIXTURES postgres LIBS sqlq_sql TIMEOUT 120)
sqlq_integration_test(backfill_cli FIXTURES azurite postgres LIBS sqlq_bridge_testsupport TIMEOUT 180)
add_dependencies(itest_backfill_cli sqlq)
# One version contract: backfill -> consume --sql -> bridge -> consume --sql (issue 21.1).
sqlq_integration_test(backfill_sink FIXTURES azurite postgres TIMEOUT 300)
# The cursor source at default settings: late commits, kill -9, a read-only role (issue 20.8).
sqlq_integration_test(cursor_defaults FIXTURES azurite postgres TIMEOUT 300)
sqlq_integration_test(cursor_schema FIXTURES postgres LIBS sqlq_sql TIMEOUT 120)
# bridge --once on a number cursor waits out the default lag; sqlq status --table of a cursor source.
sqlq_integration_test(cursor_once FIXTURES azurite postgres TIMEOUT 180)
# A backfill repairs a --sql replica that missed changes (versions above every earlier message
# of a key, even after the log was trimmed; --repair removes what the source no longer has),
# on every change-log database.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.backfill_repair.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_backfill_repair.sh ${db})
  set_tests_properties(integration.backfill_repair.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()
