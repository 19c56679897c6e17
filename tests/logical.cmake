# The PostgreSQL logical-decoding source (sql/postgres/): the pgoutput decoder and the
# acknowledgement rule as units; the replication stream, slot lifecycle and bridge against a
# server with wal_level = logical.
sqlq_unit_test(pgoutput sqlq_sql)
sqlq_unit_test(pg_ack sqlq_sql)
sqlq_unit_test(logical_txn sqlq_sql)
sqlq_integration_test(logical_messages FIXTURES azurite postgres TIMEOUT 180)
sqlq_integration_test(logical_faults TIMEOUT 420)
sqlq_integration_test(logical_large FIXTURES azurite postgres TIMEOUT 300)
sqlq_integration_test(logical_same_json FIXTURES azurite postgres TIMEOUT 180)
sqlq_integration_test(logical_backfill FIXTURES azurite postgres TIMEOUT 420)
