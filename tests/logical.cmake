# The PostgreSQL logical-decoding source (sql/postgres/): the pgoutput decoder and the
# acknowledgement rule as units; the replication stream, slot lifecycle and bridge against a
# server with wal_level = logical.
sqlq_unit_test(pgoutput sqlq_sql)
sqlq_unit_test(pg_ack sqlq_sql)
sqlq_unit_test(logical_txn sqlq_sql)
sqlq_database_test(logical_messages DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(logical_faults TIMEOUT 420)
sqlq_database_test(logical_large DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 300)
sqlq_database_test(logical_same_json DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 180)
sqlq_database_test(logical_backfill DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 420)
# A logical route reopened after failures logs each setup warning once; sqlq status shows them.
sqlq_database_test(logical_warning_once DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 180)
# The setup commands a logical route's errors print run as pasted (a table named with a space
# and a quote, a bridge name of its own).
sqlq_database_test(logical_setup_hints DATABASES postgres
  WITHOUT "sqlite mariadb: logical decoding (--source logical) is PostgreSQL's"
  FIXTURES azurite TIMEOUT 120)
