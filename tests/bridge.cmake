# bridge: the `sqlq bridge` daemon against real SQLite/PostgreSQL and Azurite.
sqlq_unit_test(delivery sqlq_bridge)
sqlq_unit_test(outage sqlq_bridge)
sqlq_unit_test(route_state sqlq_bridge)
sqlq_unit_test(route_filter sqlq_bridge)

add_library(sqlq_bridge_testsupport STATIC integration/bridge_support.c)
target_link_libraries(sqlq_bridge_testsupport PUBLIC sqlq_queue sqlq_sql sqlq_testdb sqlq_testsupport PkgConfig::CMOCKA)
target_include_directories(sqlq_bridge_testsupport PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)

# The bridge scenarios every database runs (integration.bridge_scenarios.sqlite, .postgres, ...).
sqlq_database_test(bridge_scenarios SOURCES log logical
  WITHOUT "cursor: the scenarios need deletes and the log's op, the cursor source has a case here and suites of its own"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 400)
# Each database's own column types through a running bridge.
sqlq_database_test(bridge_types SOURCES log logical
  WITHOUT "cursor: the cursor source reads rows with the same code as the log's poll (row_json), its types ride in suite types_roundtrip"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 300)
# A server's schemas, transactions and connections under a running bridge.
sqlq_database_test(bridge_server SOURCES log logical
  WITHOUT "sqlite: a file, not a server: one writer at a time, no schemas, no connections to drop"
          "cursor: a cursor source reads committed rows behind its lag, suites cursor_defaults and cursor_failover"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 300)
# kill -9 at random moments, and two instances of one bridge, under writers.
sqlq_database_test(bridge_crash SOURCES log logical
  WITHOUT "cursor: suite cursor_failover kills cursor pollers"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 400)
sqlq_database_test(bridge_instances SOURCES log
  WITHOUT "cursor: one cursor poller works while the other stands by: suite cursor_failover"
          "logical: one instance streams the slot while the others stand by, no leases to share: suite logical_faults"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 300)
sqlq_integration_test(bridge_outage LIBS sqlq_bridge_testsupport TIMEOUT 300)
sqlq_integration_test(bridge_outage_metrics TIMEOUT 180)
sqlq_integration_test(bridge_cli FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(bridge_batch_size FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(bridge_credentials TIMEOUT 180)
sqlq_integration_test(bridge_once FIXTURES azurite TIMEOUT 300)
sqlq_integration_test(bridge_shutdown_hang TIMEOUT 120)
sqlq_integration_test(bridge_throttled FIXTURES azurite TIMEOUT 180)
sqlq_database_test(bridge_schema SOURCES log logical
  WITHOUT "cursor: the cursor source under schema changes is suite cursor_schema"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 600)
sqlq_database_test(bridge_message_options SOURCES log logical
  WITHOUT "cursor: the route options are the same code for every source, run here on the change log"
  FIXTURES azurite TIMEOUT 300)
# Tables without a primary key, keyed by a unique index (--key-columns), on every database.
sqlq_database_test(bridge_key_columns SOURCES log logical
  WITHOUT "cursor: its cases for the cursor source and backfill run inside the log's test"
  FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 300)

# Changed columns and before images, on every change-log database.
sqlq_database_test(bridge_changed_before SOURCES log
  WITHOUT "cursor: a cursor source reads the row as it is now: no changed columns, no before image"
          "logical: changed and before come from REPLICA IDENTITY FULL per transaction, not from setup's log columns collapsed between polls (docs/logical-source.md, Messages): suite logical_messages"
  FIXTURES azurite TIMEOUT 300)

# x1: setup's change-log options (types after ALTER TYPE, reserved key names, --no-…, long
# names, config-file routes), on every change-log database.
sqlq_database_test(setup_options SOURCES log
  WITHOUT "cursor: sqlq setup installs nothing for a cursor source"
          "logical: the change log's option columns, a slot has none (the logical source refuses before and changed without REPLICA IDENTITY FULL: suite logical_messages)"
  FIXTURES azurite TIMEOUT 300)

# One change log per table: a table named like another's hashed log gets its own; a log the
# registry lists against two tables is refused by setup, bridge and status.
sqlq_database_test(setup_shared_log SOURCES log
  WITHOUT "cursor logical: a cursor or logical source has no change log"
  FIXTURES azurite TIMEOUT 300)

# The version contract across setup --drop and setup: versions never go back, on every database.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.setup_drop_versions.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_setup_drop_versions.sh ${db})
  set_tests_properties(integration.setup_drop_versions.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# A route that cannot capture (its key changed) still measures its backlog from the log, says
# why (sqlq_route_stopped, sqlq status), on every database.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.bridge_stopped_route.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_bridge_stopped_route.sh ${db})
  set_tests_properties(integration.bridge_stopped_route.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# setup --drop refuses while a bridge runs or changes are pending; --force; state gone.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.setup_drop_guard.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_setup_drop_guard.sh ${db})
  set_tests_properties(integration.setup_drop_guard.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# A body --encoding plain cannot carry: refused before sending, poisoned alone, never an outage.
sqlq_database_test(bridge_plain_body SOURCES log logical
  WITHOUT "cursor: a body is refused after the source, the same for every source"
  FIXTURES azurite TIMEOUT 300)

# bridge_scale: instances started and stopped as a scaler would (1, 3, 1; kill -9 and SIGTERM)
# on a sharded route under a steady writer; the official SDK drains every shard.
sqlq_database_test(bridge_scale SOURCES log DATABASES postgres mariadb
  WITHOUT "sqlite: one writer at a time, instances take turns: nothing to scale out"
          "cursor: one instance reads a cursor, no shared leases to hand between instances"
          "logical: one instance streams the slot, no shared leases to hand between instances"
  FIXTURES azurite TIMEOUT 240)

# shard_tools: a shard set through bridge, consume, poison and a config file with two accounts.
sqlq_integration_test(shard_tools FIXTURES azurite TIMEOUT 180)
