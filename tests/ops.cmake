# ops: metrics registry, health/metrics HTTP endpoint, container packaging, log secrecy.
sqlq_unit_test(metrics sqlq_common)

# The HTTP endpoint on a real socket (no fixtures: it needs no Azurite or PostgreSQL).
sqlq_integration_test(http_server LIBS sqlq_health CURL::libcurl TIMEOUT 60)

# docker/: the entrypoint dispatching to the built sqlq, static checks of the Dockerfile,
# the KEDA objects (shipped and generated per shard) against KEDA's CRD fields,
# compose and Kubernetes files. Unit-labelled: no servers, a second each (they also run in
# the Docker build stage).
foreach(name docker_entrypoint docker_files keda_files)
  add_test(NAME unit.${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_${name}.sh)
  set_tests_properties(unit.${name} PROPERTIES LABELS unit TIMEOUT 60
    ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
endforeach()
set_tests_properties(unit.keda_files PROPERTIES SKIP_RETURN_CODE 77)

# scripts/install-deps.sh --runtime is idempotent and leaves the ODBC drivers loadable. It may
# install packages on a machine that lacks them, hence integration, not unit.
sqlq_integration_test(install_deps TIMEOUT 600)

# No account key, SAS signature or database password in any output, at trace, text and JSON.
sqlq_database_test(log_secrecy DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 120)
set_tests_properties(integration.log_secrecy.postgres PROPERTIES SKIP_RETURN_CODE 77)

# The endpoint as a daemon serves it: `sqlq consume --listen` against Azurite, curl CLI.
sqlq_integration_test(metrics_endpoint FIXTURES azurite TIMEOUT 120)

# Secrets out of /proc/PID/cmdline and configuration mistakes as exit 2.
sqlq_integration_test(cli_hardening FIXTURES azurite TIMEOUT 120)

# Public and private headers: internals stay out of other libraries' reach.
add_test(NAME unit.public_headers COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_public_headers.sh
  ${CMAKE_BINARY_DIR} ${CMAKE_C_COMPILER})
set_tests_properties(unit.public_headers PROPERTIES LABELS unit TIMEOUT 120
  ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")

# The command line's one dispatcher and one account set-up; no servers.
add_test(NAME unit.cli_dispatch COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cli_dispatch.sh)
set_tests_properties(unit.cli_dispatch PROPERTIES LABELS unit TIMEOUT 60
  ENVIRONMENT "${SQLQ_TEST_ENVIRONMENT}")
sqlq_database_test(cli_outside_text DATABASES postgres
  WITHOUT "sqlite mariadb: written for PostgreSQL only so far (not yet per database)"
  FIXTURES azurite TIMEOUT 180)
