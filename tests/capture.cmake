# sql/ change capture (capture engineer): change log, leases, SQL Server change-tracking SQL.
# The capture algorithm, and writers that commit out of order or concurrently, on every
# change-log database (tests/integration/capture_support.c holds what differs per database).
sqlq_database_test(capture SOURCES log
  WITHOUT "cursor: the cursor source leases by checkpoint, not per change: suite cursor_source"
          "logical: changes leased in memory from the stream, the slot confirmed past released transactions: suites logical_messages and logical_faults"
  LIBS sqlq_sql TIMEOUT 180)
target_sources(itest_capture PRIVATE integration/capture_support.c)
sqlq_database_test(capture_concurrent SOURCES log
  WITHOUT "cursor: the cursor source reads committed rows behind a safety lag: suite cursor_defaults"
          "logical: the stream hands transactions over in commit order, one reader: suites bridge_crash and logical_faults"
  LIBS sqlq_sql TIMEOUT 240)
target_sources(itest_capture_concurrent PRIVATE integration/capture_support.c)
# PostgreSQL's read horizon: only open transactions that wrote a log hold it back, and as long as
# they must (early xid, savepoints, prepared and killed transactions), upgrades of its logs, the
# grants a writer and a reader need.
sqlq_database_test(capture_horizon SOURCES log DATABASES postgres
  WITHOUT "sqlite: one writer at a time, versions from the log itself: no horizon (suite change_log_counter)"
          "mariadb: versions stamped at commit, nothing held back: no horizon (suites change_log_stamped, capture_concurrent)"
          "cursor: reads committed rows behind a safety lag (suite cursor_defaults)"
          "logical: versions are commit LSNs sent at commit: no horizon (late commits: suite bridge_server)"
  LIBS sqlq_sql TIMEOUT 180)
# SQLite's log versions without a counter write: trim, reconnect, upgrade of an earlier log,
# drop + setup.
sqlq_database_test(change_log_counter SOURCES log DATABASES sqlite
  WITHOUT "postgres: versions from a sequence (suite capture_horizon)"
          "mariadb: versions stamped at commit (suite change_log_stamped)"
          "cursor logical: no change log"
  LIBS sqlq_sql TIMEOUT 60)
sqlq_unit_test(capture_sql sqlq_sql)
# The sources' SQL traits and PostgreSQL's horizon statements are internal to sql/.
target_include_directories(test_capture_sql PRIVATE ${CMAKE_SOURCE_DIR}/sql/capture
  ${CMAKE_SOURCE_DIR}/sql/mssql ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_unit_test(capture_horizon sqlq_sql)
target_include_directories(test_capture_horizon PRIVATE ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_database_test(setup_cli SOURCES log
  WITHOUT "cursor: its case (setup installs nothing, checks the column) runs inside each database's test"
          "logical: the change log's objects and their names, the logical source's setup (refusals, publication, slot, --drop) is suite logical_messages"
  TIMEOUT 120)
# PostgreSQL's horizon under a running bridge: open writers of other tables delay nothing; one of
# this log holds later changes back, named by the log, sqlq status and /metrics.
sqlq_database_test(bridge_held_back SOURCES log DATABASES postgres
  WITHOUT "sqlite: one writer at a time: nothing commits past an open writer"
          "mariadb: a late commit is stamped late, nothing is held back (suite bridge_server)"
          "cursor: reads behind a safety lag, nothing is held back by a writer (suite cursor_defaults)"
          "logical: the stream sends a transaction at its commit, nothing is held back (late commits: suite bridge_server)"
  FIXTURES azurite TIMEOUT 180)
# The trigger's wake-up NOTIFY as a listening session sees it (once per writing transaction).
sqlq_database_test(capture_notify SOURCES log DATABASES postgres
  WITHOUT "sqlite: no NOTIFY, the wake-up probes PRAGMA data_version (suite bridge_wakeup_data_version)"
          "mariadb: no change signal: the bridge polls"
          "cursor logical: no trigger, no wake-up (the logical source's stream is its signal)"
  FIXTURES azurite TIMEOUT 60)
# A role named sqlq (the schema's name): setup warns; --drop leaves a schema holding other objects.
sqlq_database_test(setup_search_path SOURCES log DATABASES postgres
  WITHOUT "sqlite: no schemas or roles"
          "mariadb: sqlq's objects live in database sqlq, which no search path reaches"
          "cursor: setup installs nothing"
          "logical: its objects are a publication and slots, outside any schema"
  FIXTURES azurite TIMEOUT 120)
# The opt-in log columns' SQL (sql/capture/change_log_options.c).
sqlq_unit_test(change_log_options sqlq_sql)
