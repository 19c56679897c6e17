# Cursor polling source and backfill.
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

sqlq_database_test(cursor_source SOURCES cursor
  WITHOUT "log logical: the cursor source's own rule (a cursor column read behind a safety lag)"
  LIBS sqlq_sql TIMEOUT 180)

# Two poller processes (tests/integration/cursor_poller.c) on one table: kill -9, SIGSTOP.
add_executable(cursor_poller integration/cursor_poller.c)
target_link_libraries(cursor_poller PRIVATE sqlq_bridge)
sqlq_database_test(cursor_failover SOURCES cursor
  WITHOUT "log logical: the cursor source's own rule (a cursor column read behind a safety lag)"
  FIXTURES azurite LIBS sqlq_bridge_testsupport
  TIMEOUT 240 ENVIRONMENT "SQLQ_CURSOR_POLLER=$<TARGET_FILE:cursor_poller>")
add_dependencies(itest_cursor_failover cursor_poller)

sqlq_database_test(backfill DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 120)
sqlq_database_test(backfill_cli DATABASES sqlite postgres mariadb FIXTURES azurite
  LIBS sqlq_bridge_testsupport TIMEOUT 300)
add_dependencies(itest_backfill_cli sqlq)
# One version contract: backfill -> consume --sql -> bridge -> consume --sql.
sqlq_database_test(backfill_sink DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 300)
# The cursor source at default settings: late commits, kill -9, a read-only role.
sqlq_database_test(cursor_defaults SOURCES cursor
  WITHOUT "log logical: the cursor source's own rule (a cursor column read behind a safety lag)"
  FIXTURES azurite TIMEOUT 300)
sqlq_database_test(cursor_schema SOURCES cursor
  WITHOUT "log logical: the cursor source's own rule (a cursor column read behind a safety lag)"
  LIBS sqlq_sql TIMEOUT 120)
# bridge --once on a number cursor waits out the default lag; sqlq status --table of a cursor source.
sqlq_database_test(cursor_once SOURCES cursor
  WITHOUT "log logical: the cursor source's own rule (a cursor column read behind a safety lag)"
  FIXTURES azurite TIMEOUT 180)
# A backfill repairs a --sql replica that missed changes (versions above every earlier message
# of a key, even after the log was trimmed; --repair removes what the source no longer has),
# on every change-log database.
sqlq_database_test(backfill_repair SOURCES log
  WITHOUT "cursor: the repair's case is a trimmed change log"
          "logical: a backfill of a logical-only table publishes version 0 and cannot repair a newer state (docs/logical-source.md, Versions)"
  FIXTURES azurite TIMEOUT 300)
