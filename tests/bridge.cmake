# bridge: the envelope (pure) and the `sqlq bridge` daemon against real SQLite/PostgreSQL and Azurite.
sqlq_unit_test(envelope sqlq_app)
