sqlq_unit_test(config sqlq_app)
