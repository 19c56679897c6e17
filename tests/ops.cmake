# ops: metrics registry, health/metrics HTTP endpoint, container entrypoint and packaging checks.
sqlq_unit_test(metrics sqlq_common)
