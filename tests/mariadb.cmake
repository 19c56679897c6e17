# MariaDB/MySQL: tests against the private MariaDB server of the mariadb fixture.
# The stamped log's own mechanism: versions given at commit (the capture suites run on it too).
sqlq_database_test(change_log_stamped SOURCES log DATABASES mariadb
  WITHOUT "sqlite postgres: their logs take versions as rows are written (a counter, a sequence): nothing to stamp"
          "cursor logical: no change log"
  LIBS sqlq_sql TIMEOUT 120)
# mariadb_change_log.h is internal to sql/: the test reaches the folder for it.
target_include_directories(itest_change_log_stamped PRIVATE ${CMAKE_SOURCE_DIR}/sql/mariadb)
