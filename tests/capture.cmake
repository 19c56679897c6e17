# sql/ change capture (capture engineer): change log, leases, SQL Server change-tracking SQL.
# The capture algorithm, and writers that commit out of order or concurrently, on every
# change-log database (tests/integration/capture_support.c holds what differs per database).
sqlq_database_test(capture SOURCES log
  WITHOUT "cursor: the cursor source leases by checkpoint, not per change: suite cursor_source"
  LIBS sqlq_sql TIMEOUT 180)
target_sources(itest_capture PRIVATE integration/capture_support.c)
sqlq_database_test(capture_concurrent SOURCES log
  WITHOUT "cursor: the cursor source reads committed rows behind a safety lag: suite cursor_defaults"
  LIBS sqlq_sql TIMEOUT 240)
target_sources(itest_capture_concurrent PRIVATE integration/capture_support.c)
sqlq_integration_test(capture_pg FIXTURES postgres LIBS sqlq_sql TIMEOUT 180)
# SQLite versions without a counter write: trim, reconnect, upgrade of an earlier log, drop + setup.
sqlq_integration_test(capture_versions LIBS sqlq_sql TIMEOUT 60)
sqlq_unit_test(capture_sql sqlq_sql)
sqlq_unit_test(capture_horizon sqlq_sql)
sqlq_database_test(setup_cli SOURCES log
  WITHOUT "cursor: its case (setup installs nothing, checks the column) runs inside each database's test"
  TIMEOUT 120)
sqlq_integration_test(capture_pg_writers FIXTURES azurite postgres TIMEOUT 180)
# The trigger's wake-up NOTIFY as a listening session sees it (once per writing transaction).
sqlq_integration_test(capture_pg_notify FIXTURES postgres TIMEOUT 60)
# A role named sqlq (the schema's name): setup warns; --drop leaves a schema holding other objects.
sqlq_integration_test(setup_role FIXTURES postgres TIMEOUT 120)
# Issue 16 items 1-2: the opt-in log columns' SQL (sql/change_log_options.c).
sqlq_unit_test(change_log_options sqlq_sql)
