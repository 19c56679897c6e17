# bridge: the `sqlq bridge` daemon against real SQLite/PostgreSQL and Azurite.
sqlq_unit_test(delivery sqlq_bridge)
sqlq_unit_test(outage sqlq_bridge)
sqlq_unit_test(route_state sqlq_bridge)
sqlq_unit_test(route_filter sqlq_bridge)

add_library(sqlq_bridge_testsupport STATIC integration/bridge_support.c)
target_link_libraries(sqlq_bridge_testsupport PUBLIC sqlq_queue sqlq_sql sqlq_testdb sqlq_testsupport PkgConfig::CMOCKA)
target_include_directories(sqlq_bridge_testsupport PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)

# The bridge scenarios every database runs (integration.bridge_scenarios.sqlite, .postgres, ...).
sqlq_database_test(bridge_scenarios FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 400)
sqlq_integration_test(bridge_postgres FIXTURES azurite postgres LIBS sqlq_bridge_testsupport TIMEOUT 300)
sqlq_integration_test(bridge_crash FIXTURES azurite postgres LIBS sqlq_bridge_testsupport TIMEOUT 400)
sqlq_integration_test(bridge_instances FIXTURES azurite postgres LIBS sqlq_bridge_testsupport TIMEOUT 300)
sqlq_integration_test(bridge_outage LIBS sqlq_bridge_testsupport TIMEOUT 300)
sqlq_integration_test(bridge_outage_metrics TIMEOUT 180)
sqlq_integration_test(bridge_cli FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(bridge_batch_size FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(bridge_credentials TIMEOUT 180)
sqlq_integration_test(bridge_once FIXTURES azurite TIMEOUT 300)
sqlq_integration_test(bridge_shutdown_hang TIMEOUT 120)
sqlq_integration_test(bridge_throttled FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(bridge_schema FIXTURES azurite postgres LIBS sqlq_bridge_testsupport TIMEOUT 400)
sqlq_integration_test(bridge_message_options FIXTURES azurite postgres TIMEOUT 300)
# Tables without a primary key, keyed by a unique index (--key-columns), on every database.
sqlq_database_test(bridge_key_columns FIXTURES azurite LIBS sqlq_bridge_testsupport TIMEOUT 300)

# Issue 16 items 1-2: changed columns and before images, on every change-log database.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.bridge_changed_before.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_bridge_changed_before.sh ${db})
  set_tests_properties(integration.bridge_changed_before.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# x1: setup's change-log options (types after ALTER TYPE, reserved key names, --no-…, long
# names, config-file routes), on every change-log database.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.setup_options.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_setup_options.sh ${db})
  set_tests_properties(integration.setup_options.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# One change log per table: a table named like another's hashed log gets its own; a log the
# registry lists against two tables is refused by setup, bridge and status.
foreach(db ${SQLQ_TEST_DATABASES})
  add_test(NAME integration.setup_shared_log.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_setup_shared_log.sh ${db})
  set_tests_properties(integration.setup_shared_log.${db} PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED "azurite;${SQLQ_TEST_DB_FIXTURES_${db}}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

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
sqlq_integration_test(bridge_plain_body FIXTURES azurite postgres TIMEOUT 300)

# bridge_scale: instances started and stopped as a scaler would (1, 3, 1; kill -9 and SIGTERM)
# on a sharded route under a steady writer; the official SDK drains every shard.
foreach(db postgres mariadb)
  add_test(NAME integration.bridge_scale.${db}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_bridge_scale.sh ${db})
  set_tests_properties(integration.bridge_scale.${db} PROPERTIES LABELS integration TIMEOUT 240
    FIXTURES_REQUIRED "azurite;${db}" ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()

# shard_tools: a shard set through bridge, consume, poison and a config file with two accounts.
sqlq_integration_test(shard_tools FIXTURES azurite TIMEOUT 180)
