# Consumer runtime, handlers, SQL sink and poison tools (the "consumer" area).
sqlq_unit_test(disposition sqlq_consumer)
sqlq_unit_test(renewal sqlq_consumer)
sqlq_unit_test(consumer sqlq_consumer)
sqlq_unit_test(abandoned sqlq_consumer)
sqlq_unit_test(upsert sqlq_sql)
sqlq_integration_test(consumer_poison FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_interop FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_renewal FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_kill9 FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_polling FIXTURES azurite TIMEOUT 60)
# It checks real gaps between polls to within 250 ms: alone, so other tests do not stretch them.
set_property(TEST integration.consumer_polling PROPERTY RUN_SERIAL TRUE)
sqlq_integration_test(poison_tools FIXTURES azurite TIMEOUT 180)
sqlq_database_test(sql_sink DATABASES sqlite postgres mariadb LIBS sqlq_consumer TIMEOUT 120)
sqlq_database_test(consume_sql DATABASES sqlite postgres mariadb FIXTURES azurite TIMEOUT 180)
sqlq_database_test(consume_sql_conflicts DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 240)
sqlq_integration_test(handler_exec LIBS sqlq_consumer TIMEOUT 60)
sqlq_integration_test(handler_http LIBS sqlq_consumer PkgConfig::MHD TIMEOUT 60)
sqlq_integration_test(consumer_stop FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_hostile_service TIMEOUT 120)
sqlq_integration_test(consumer_drain FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(consumer_handler_input FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(consumer_least_privilege FIXTURES azurite TIMEOUT 120)
# curl_global_init once for the queue transport and every --http handler.
sqlq_unit_test(libcurl sqlq_consumer CURL::libcurl)
target_link_options(test_libcurl PRIVATE -Wl,--wrap=curl_global_init)
sqlq_integration_test(consumer_reject FIXTURES azurite TIMEOUT 300)
# The --sql sink's constraint violations: poison at once or retry, per database.
sqlq_database_test(consume_sql_reject DATABASES sqlite postgres mariadb FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(consume_sql_outage FIXTURES azurite TIMEOUT 300)
sqlq_integration_test(consumer_handler_outage FIXTURES azurite TIMEOUT 300)
