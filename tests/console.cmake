# The operator console (console/) in a real browser: the system Chromium (/usr/bin/chromium)
# driven by playwright-core pinned in package-lock.json, against the fixtures' Azurite and
# PostgreSQL and a SQLite file; and the monitoring files in docker/monitoring/.
sqlq_database_test(console_browser DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 240)
sqlq_integration_test(console_access FIXTURES azurite TIMEOUT 120)
sqlq_integration_test(monitoring_files FIXTURES azurite TIMEOUT 120)
