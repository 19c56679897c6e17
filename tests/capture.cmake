# sql/ change capture (capture engineer): change log, leases, SQL Server change-tracking SQL.
sqlq_integration_test(capture FIXTURES postgres LIBS sqlq_sql TIMEOUT 180)
sqlq_integration_test(capture_pg FIXTURES postgres LIBS sqlq_sql TIMEOUT 180)
# SQLite versions without a counter write: trim, reconnect, upgrade of an earlier log, drop + setup.
sqlq_integration_test(capture_versions LIBS sqlq_sql TIMEOUT 60)
sqlq_unit_test(capture_sql sqlq_sql)
# The sources' SQL traits and PostgreSQL's horizon statements are internal to sql/.
target_include_directories(test_capture_sql PRIVATE ${CMAKE_SOURCE_DIR}/sql/capture
  ${CMAKE_SOURCE_DIR}/sql/mssql ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_unit_test(capture_horizon sqlq_sql)
target_include_directories(test_capture_horizon PRIVATE ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_integration_test(setup_cli FIXTURES postgres TIMEOUT 120)
sqlq_integration_test(capture_pg_writers FIXTURES azurite postgres TIMEOUT 180)
# The trigger's wake-up NOTIFY as a listening session sees it (once per writing transaction).
sqlq_integration_test(capture_pg_notify FIXTURES postgres TIMEOUT 60)
# A role named sqlq (the schema's name): setup warns; --drop leaves a schema holding other objects.
sqlq_integration_test(setup_role FIXTURES postgres TIMEOUT 120)
# Issue 16 items 1-2: the opt-in log columns' SQL (sql/capture/change_log_options.c).
sqlq_unit_test(change_log_options sqlq_sql)
