# Consumer runtime, handlers, SQL sink and poison tools (the "consumer" area).
sqlq_unit_test(disposition sqlq_queue)
sqlq_unit_test(renewal sqlq_queue)
sqlq_unit_test(consumer sqlq_queue)
sqlq_unit_test(upsert sqlq_sql)
