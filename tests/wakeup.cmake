# wakeup: a route polls at once on a hint of a change: PostgreSQL's NOTIFY (the bridge_wakeup_notify
# suites), SQLite's PRAGMA data_version (bridge_wakeup_data_version); MariaDB has no change signal.
sqlq_database_test(bridge_wakeup_notify SOURCES log DATABASES postgres
  WITHOUT "sqlite: no NOTIFY (suite bridge_wakeup_data_version)" "mariadb: no change signal"
          "cursor: no trigger, no wake-up" "logical: no trigger, the stream itself is the signal"
  FIXTURES azurite TIMEOUT 180)
sqlq_database_test(bridge_wakeup_data_version SOURCES log DATABASES sqlite
  WITHOUT "postgres: its signal is NOTIFY (suite bridge_wakeup_notify)" "mariadb: no change signal"
          "cursor logical: no wake-up"
  FIXTURES azurite TIMEOUT 180)
# A hint during a short batch polls again at once (steady load).
sqlq_database_test(bridge_wakeup_notify_steady SOURCES log DATABASES postgres
  WITHOUT "sqlite: no NOTIFY" "mariadb: no change signal" "cursor: no wake-up"
          "logical: no trigger, the stream itself is the signal"
  FIXTURES azurite TIMEOUT 180)
# wakeup_off warned (sqlq.notify unset), DSN= resolved, sqlq_wakeups_total.
sqlq_database_test(bridge_wakeup_notify_notice SOURCES log DATABASES postgres
  WITHOUT "sqlite: no NOTIFY" "mariadb: no change signal" "cursor: no wake-up"
          "logical: no trigger, the stream itself is the signal"
  FIXTURES azurite TIMEOUT 120)
# The trigger notifies only while a bridge holds or waits for the wake-up lock; the arm race
# behind an open writer; no poll storm behind a held-back horizon; two instances.
sqlq_database_test(bridge_wakeup_notify_armed SOURCES log DATABASES postgres
  WITHOUT "sqlite: no NOTIFY" "mariadb: no change signal" "cursor: no wake-up"
          "logical: no trigger, the stream itself is the signal"
  FIXTURES azurite TIMEOUT 180)
