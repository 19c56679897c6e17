# MariaDB/MySQL (issue 17): tests against the private MariaDB server of the mariadb fixture.
sqlq_integration_test(change_log_mariadb FIXTURES mariadb LIBS sqlq_sql TIMEOUT 120)
# mariadb_change_log.h is internal to sql/: the test reaches the folder for it.
target_include_directories(itest_change_log_mariadb PRIVATE ${CMAKE_SOURCE_DIR}/sql/mariadb)
sqlq_integration_test(sql_sink_mariadb FIXTURES mariadb LIBS sqlq_consumer TIMEOUT 120)
sqlq_integration_test(bridge_mariadb FIXTURES azurite mariadb TIMEOUT 300)
