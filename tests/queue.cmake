# queue/: connection strings, SharedKey signing, XML, codec, the REST client, `sqlq queue`.
sqlq_unit_test(shared_key sqlq_queue)
sqlq_unit_test(account sqlq_queue)
sqlq_unit_test(xml sqlq_queue)
sqlq_unit_test(codec sqlq_queue)
