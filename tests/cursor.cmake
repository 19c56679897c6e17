# Cursor polling source and backfill (issue 7).
sqlq_unit_test(keyset sqlq_sql)
sqlq_unit_test(cursor_query sqlq_sql)
sqlq_unit_test(cursor_column sqlq_sql)
sqlq_unit_test(cursor_pending sqlq_sql)
sqlq_unit_test(watermark sqlq_sql)

sqlq_integration_test(cursor_source FIXTURES postgres LIBS sqlq_sql TIMEOUT 120)
