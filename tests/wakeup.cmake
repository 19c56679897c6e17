# wakeup: a route polls at once on a hint of a change (PostgreSQL NOTIFY, SQLite data_version).
# bridge_wakeup_steady: a hint during a short batch polls again at once (issue 22, steady load).
sqlq_integration_test(bridge_wakeup FIXTURES azurite postgres TIMEOUT 180)
sqlq_integration_test(bridge_wakeup_sqlite FIXTURES azurite TIMEOUT 180)
sqlq_integration_test(bridge_wakeup_steady FIXTURES azurite postgres TIMEOUT 180)
# bridge_wakeup_notice: wakeup_off warned (sqlq.notify unset), DSN= resolved, sqlq_wakeups_total.
sqlq_integration_test(bridge_wakeup_notice FIXTURES azurite postgres TIMEOUT 120)
# bridge_wakeup_armed: the trigger notifies only while a bridge holds or waits for the wake-up
# lock; the arm race behind an open writer; no poll storm behind a held-back horizon; two instances.
sqlq_integration_test(bridge_wakeup_armed FIXTURES azurite postgres TIMEOUT 180)
