# Cursor polling source and backfill (issue 7).
sqlq_unit_test(keyset sqlq_sql)
sqlq_unit_test(cursor_query sqlq_sql)
sqlq_unit_test(cursor_column sqlq_sql)
sqlq_unit_test(cursor_pending sqlq_sql)
sqlq_unit_test(cursor_lag sqlq_sql)
sqlq_unit_test(watermark sqlq_sql)
sqlq_unit_test(backfill sqlq_sql)

sqlq_database_test(cursor_source SOURCES cursor LIBS sqlq_sql TIMEOUT 180)

# Two poller processes (tests/integration/cursor_poller.c) on one table: kill -9, SIGSTOP.
add_executable(cursor_poller integration/cursor_poller.c)
target_link_libraries(cursor_poller PRIVATE sqlq_bridge)
sqlq_database_test(cursor_failover SOURCES cursor FIXTURES azurite LIBS sqlq_bridge_testsupport
  TIMEOUT 240 ENVIRONMENT "SQLQ_CURSOR_POLLER=$<TARGET_FILE:cursor_poller>")
add_dependencies(itest_cursor_failover cursor_poller)

sqlq_database_test(backfill DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 120)
sqlq_database_test(backfill_cli DATABASES sqlite postgres mariadb FIXTURES azurite
  LIBS sqlq_bridge_testsupport TIMEOUT 300)
add_dependencies(itest_backfill_cli sqlq)
# One version contract: backfill -> consume --sql -> bridge -> consume --sql (issue 21.1).
sqlq_integration_test(backfill_sink FIXTURES azurite postgres TIMEOUT 300)
# The cursor source at default settings: late commits, kill -9, a read-only role (issue 20.8).
sqlq_database_test(cursor_defaults SOURCES cursor FIXTURES azurite TIMEOUT 300)
sqlq_database_test(cursor_schema SOURCES cursor LIBS sqlq_sql TIMEOUT 120)
# bridge --once on a number cursor waits out the default lag; sqlq status --table of a cursor source.
sqlq_database_test(cursor_once SOURCES cursor FIXTURES azurite TIMEOUT 180)
