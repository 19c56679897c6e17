# ops: metrics registry, health/metrics HTTP endpoint, container entrypoint and packaging checks.
sqlq_unit_test(metrics sqlq_common)
# The HTTP endpoint on a real socket (no fixtures: it needs no Azurite or PostgreSQL).
sqlq_integration_test(http_server LIBS sqlq_app CURL::libcurl TIMEOUT 60)
