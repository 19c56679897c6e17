# queue/: connection strings, SharedKey signing, XML, codec, the REST client, `sqlq queue`.
sqlq_unit_test(shared_key sqlq_queue)
sqlq_unit_test(account sqlq_queue)
sqlq_unit_test(xml sqlq_queue)
sqlq_unit_test(codec sqlq_queue)
sqlq_integration_test(queue_client FIXTURES azurite LIBS sqlq_queue TIMEOUT 120)
# Starts, stops and restarts its own on-disk Azurite (no shared fixture needed).
sqlq_integration_test(queue_retry LIBS sqlq_queue TIMEOUT 120)
