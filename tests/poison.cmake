# Operator tools: safe terminal text, poison matching, and the
# truthfulness of poison/queue commands against Azurite behind a fault-injecting proxy.
sqlq_unit_test(term_text sqlq_cli)
sqlq_unit_test(poison_match sqlq_queue)
sqlq_integration_test(poison_truth FIXTURES azurite TIMEOUT 400)
# One retry budget per operator command against an endpoint that refuses connections (no
# server needed; the commands run side by side, about 20 s).
sqlq_integration_test(poison_outage TIMEOUT 120)
sqlq_integration_test(poison_honest FIXTURES azurite TIMEOUT 300)
