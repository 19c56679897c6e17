# message/: every message shape written and read back, checked against docs/message.schema.json.
sqlq_unit_test(envelope sqlq_message)
sqlq_unit_test(message sqlq_message)
sqlq_unit_test(shard sqlq_message)
# common/json_text: the compact JSON every message is written with, byte for byte json_dumps'.
sqlq_unit_test(json_text sqlq_common PkgConfig::JANSSON)
