# message/: every message shape written and read back, checked against docs/message.schema.json.
sqlq_unit_test(envelope sqlq_message)
sqlq_unit_test(message sqlq_message)
sqlq_unit_test(shard sqlq_message)
