sqlq_unit_test(backoff sqlq_retry)
sqlq_unit_test(polling sqlq_retry)
sqlq_unit_test(classify sqlq_retry)
sqlq_unit_test(common sqlq_common PkgConfig::JANSSON)
