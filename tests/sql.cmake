# sql/ core (sql-core): ODBC connection, row-to-JSON, dialects, table discovery.
sqlq_integration_test(sql_db FIXTURES postgres LIBS sqlq_sql TIMEOUT 120)
