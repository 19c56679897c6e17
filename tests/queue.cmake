# queue/: connection strings, SharedKey signing, XML, codec, the REST client, `sqlq queue`.
sqlq_unit_test(shared_key sqlq_queue)
sqlq_unit_test(account sqlq_queue)
sqlq_unit_test(xml sqlq_queue)
sqlq_unit_test(codec sqlq_queue)
sqlq_unit_test(endpoint sqlq_queue)
# endpoint (and the http.h it uses) is internal to queue/: its unit test reaches the folder.
target_include_directories(test_endpoint PRIVATE ${CMAKE_SOURCE_DIR}/queue)
sqlq_unit_test(queue_names sqlq_queue)
# A scripted fake service on libmicrohttpd (127.0.0.1, any port) and a fake clock.
sqlq_unit_test(queue_faults sqlq_queue PkgConfig::MHD)
sqlq_integration_test(queue_client FIXTURES azurite LIBS sqlq_queue TIMEOUT 120)
# Starts, stops and restarts its own on-disk Azurite (no shared fixture needed).
sqlq_integration_test(queue_retry LIBS sqlq_queue TIMEOUT 120)
sqlq_integration_test(queue_interop FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(queue_cli FIXTURES azurite TIMEOUT 120)
# A queue-scoped SAS URL made by the official SDK.
sqlq_integration_test(queue_scoped_sas FIXTURES azurite TIMEOUT 120)
# TLS always verified; ca_file for a private CA (a local openssl s_server, no fixtures).
sqlq_integration_test(queue_tls TIMEOUT 60)
