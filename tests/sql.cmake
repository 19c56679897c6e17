# sql/ core (sql-core): ODBC connection, row-to-JSON, dialects, table discovery.
sqlq_unit_test(sql_dialect sqlq_sql)
target_include_directories(test_sql_dialect PRIVATE ${CMAKE_SOURCE_DIR}/sql/cursor)
sqlq_unit_test(row_json sqlq_sql)
# row_json is internal to sql/ (its header is private there): its unit test reaches the folder.
target_include_directories(test_row_json PRIVATE ${CMAKE_SOURCE_DIR}/sql/core)
sqlq_unit_test(conn_string sqlq_sql)
target_include_directories(test_conn_string PRIVATE ${CMAKE_SOURCE_DIR}/sql/core)
sqlq_unit_test(pg_listen sqlq_sql) # no server determined: wakeup_off, no libpq defaults
target_include_directories(test_pg_listen PRIVATE ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_unit_test(pg_arm sqlq_sql) # the wake-up lock: when an arm is a hint, when the unlock goes
target_include_directories(test_pg_arm PRIVATE ${CMAKE_SOURCE_DIR}/sql/postgres)
sqlq_database_test(sql_db DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 120)
# Statements prepared once per connection (sqlq_db_keep_prepared).
sqlq_database_test(db_prepared DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 60)
sqlq_database_test(sql_types DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 60)
sqlq_database_test(sql_table DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 60)
sqlq_database_test(table_key DATABASES sqlite postgres mariadb LIBS sqlq_sql TIMEOUT 60)
# Extreme values of every type through bridge and sink, PostgreSQL and SQLite.
sqlq_database_test(types_roundtrip DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 180)
sqlq_unit_test(table_shape sqlq_sql)
# PostgreSQL's text of every type (libpq, and pgoutput from a real walsender) becomes the trigger
# source's JSON through sql/postgres/pg_text: its own server, wal_level logical.
sqlq_unit_test(pg_text sqlq_sql)
sqlq_integration_test(pg_text LIBS sqlq_sql TIMEOUT 300)
target_sources(itest_pg_text PRIVATE integration/pgoutput_peek.c)
# The test reads pgoutput itself through libpq (sqlq_sql_postgres keeps libpq to itself).
target_link_libraries(itest_pg_text PRIVATE PkgConfig::PQ)
# No product file outside a database's folder (sql/<database>/) names a database or tests a
# dialect (the rule is in the script).
add_test(NAME unit.database_names COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_database_names.sh
  ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.database_names PROPERTIES LABELS unit TIMEOUT 30)
