# sql/ change capture (capture engineer): change log, leases, SQL Server change-tracking SQL.
sqlq_integration_test(capture FIXTURES postgres LIBS sqlq_sql TIMEOUT 180)
