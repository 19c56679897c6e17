# Microsoft Entra ID for Azure Storage: each test starts its own Azurite over HTTPS
# with --oauth basic and the token-service fixture (tests/support/entra.sh), so no shared fixture.
# The token cache's timing on a fake clock, refusal, one request at a time.
sqlq_unit_test(credential_cache sqlq_queue)
sqlq_integration_test(entra_sources TIMEOUT 180)
# Puts from many threads over one account: a helper the behaviour test runs.
add_executable(entra_put_load integration/entra_put_load.c)
target_link_libraries(entra_put_load PRIVATE sqlq_queue)
# Caching, refresh (short-lived tokens, a refused token), outage, refusal, http refused; ~2 min.
sqlq_integration_test(entra_behaviour TIMEOUT 300)
set_property(TEST integration.entra_behaviour APPEND PROPERTY ENVIRONMENT
  "SQLQ_ENTRA_PUT_LOAD=$<TARGET_FILE:entra_put_load>")
