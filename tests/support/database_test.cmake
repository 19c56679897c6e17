# One way to run a test against every database and change source.
#
# The axes. A database: its name, the ctest fixtures that start its server (none for SQLite, a
# file), or NO_SERVER "why" when no server of its kind runs here (its tests are registered but
# disabled). A change source: its name, the databases it captures from, and any fixture it needs
# beyond the database's. The first source that lists a database is that database's own: its
# tests are named integration.<suite>.<database>; another source's integration.<suite>.<database>-<source>.
#
#   sqlq_test_database(NAME [FIXTURES f...] [NO_SERVER "why"])
#   sqlq_test_source(NAME DATABASES db... [FIXTURES f...] [ENVIRONMENT VAR=value...])
#
# A new database is one sqlq_test_database line, its fixture and its entry in each suite's table
# of databases (and sqlq_test_create_db, tests/support/testenv.c). A new source is one
# sqlq_test_source line (with, say, FIXTURES postgres_logical for a server with wal_level=logical,
# and ENVIRONMENT SQLQ_SOURCE=NAME so that every sqlq setup and bridge a test runs uses it) and one
# word in the SOURCES of each suite that covers it.
#
# A suite, written once (tests/integration/test_SUITE.c, or test_SUITE.sh when that exists):
#
#   sqlq_database_test(SUITE
#     [SOURCES src...]     each (database, source) these sources capture from: a capture suite
#     [DATABASES db...]    only these databases; without SOURCES one test per database (SQL only)
#     [WITHOUT "key...: why" ...]  combinations left out on purpose, and why; a key is a database
#                          (mariadb), a source (cursor) or a combination (postgres-cursor)
#     [FIXTURES f...] [LIBS lib...] [TIMEOUT s] [ENVIRONMENT VAR=value...])
#
# Each test gets SQLQ_TEST_DATABASE=<database> and SQLQ_TEST_SOURCE=<source> (empty for a SQL-only
# suite) in its environment (C: sqlq_test_database(), sqlq_test_source(); shell: the variables),
# and the source's ENVIRONMENT (a test branches on its source only where it sets a table up),
# the fixtures of its database, source and suite, and the labels integration, db:<database> and
# source:<source> (ctest -L db:mariadb). Every registration is written to
# ${CMAKE_BINARY_DIR}/database_tests.txt; unit.database_tests fails while a suite neither runs nor
# names why it leaves out a combination that has a server here, or a test needs a database
# fixture without this helper.

set(SQLQ_DATABASE_TESTS_MANIFEST ${CMAKE_BINARY_DIR}/database_tests.txt)
file(WRITE ${SQLQ_DATABASE_TESTS_MANIFEST}
  "# kind|suite|registered|left out (key...: why)|missing: written by tests/support/database_test.cmake\n")

function(sqlq_test_database name)
  cmake_parse_arguments(D "" "NO_SERVER" "FIXTURES" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY SQLQ_TEST_DBS ${name})
  set_property(GLOBAL PROPERTY SQLQ_TEST_DB_FIXTURES_${name} "${D_FIXTURES}")
  set_property(GLOBAL PROPERTY SQLQ_TEST_DB_NO_SERVER_${name} "${D_NO_SERVER}")
  if(NOT D_NO_SERVER)
    # The databases with a server here, and their fixtures, for callers that loop themselves.
    set(all ${SQLQ_TEST_DATABASES} ${name})
    set(SQLQ_TEST_DATABASES ${all} PARENT_SCOPE)
    set(SQLQ_TEST_DB_FIXTURES_${name} "${D_FIXTURES}" PARENT_SCOPE)
  endif()
  set(all ${SQLQ_TEST_DATABASE_FIXTURES} ${D_FIXTURES})
  set(SQLQ_TEST_DATABASE_FIXTURES ${all} PARENT_SCOPE)
endfunction()

function(sqlq_test_source name)
  cmake_parse_arguments(S "" "" "DATABASES;FIXTURES;ENVIRONMENT" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY SQLQ_TEST_SOURCES ${name})
  set_property(GLOBAL PROPERTY SQLQ_TEST_SOURCE_ENVIRONMENT_${name} "${S_ENVIRONMENT}")
  set_property(GLOBAL PROPERTY SQLQ_TEST_SOURCE_DBS_${name} "${S_DATABASES}")
  set_property(GLOBAL PROPERTY SQLQ_TEST_SOURCE_FIXTURES_${name} "${S_FIXTURES}")
  set(all ${SQLQ_TEST_DATABASE_FIXTURES} ${S_FIXTURES})
  set(SQLQ_TEST_DATABASE_FIXTURES ${all} PARENT_SCOPE)
  foreach(db ${S_DATABASES})
    get_property(own GLOBAL PROPERTY SQLQ_TEST_DB_SOURCE_${db})
    if(NOT own)
      set_property(GLOBAL PROPERTY SQLQ_TEST_DB_SOURCE_${db} ${name})
    endif()
  endforeach()
endfunction()

# The left-out entry ("key...: why") of combination db-source (source empty: SQL only) in
# out_var, or "" when the suite does not leave it out.
function(sqlq_database_test_why out_var db source entries)
  set(${out_var} "" PARENT_SCOPE)
  foreach(entry ${entries})
    string(FIND "${entry}" ":" colon)
    if(colon LESS 1)
      message(FATAL_ERROR "WITHOUT \"${entry}\": write \"key...: why\" (a key is a database, a source or database-source, and no semicolon in why)")
    endif()
    string(SUBSTRING "${entry}" 0 ${colon} keys)
    string(REPLACE " " ";" keys "${keys}")
    foreach(key ${keys})
      if(key STREQUAL db OR (source AND (key STREQUAL source OR key STREQUAL "${db}-${source}")))
        set(${out_var} "${entry}" PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
endfunction()

# Register integration.<suite>.<name> for one combination (source empty: SQL only).
function(sqlq_database_test_add suite command db source)
  get_property(own GLOBAL PROPERTY SQLQ_TEST_DB_SOURCE_${db})
  get_property(db_fixtures GLOBAL PROPERTY SQLQ_TEST_DB_FIXTURES_${db})
  get_property(no_server GLOBAL PROPERTY SQLQ_TEST_DB_NO_SERVER_${db})
  set(name ${db})
  set(labels integration db:${db})
  set(fixtures ${T_FIXTURES} ${db_fixtures})
  set(source_env "")
  if(source)
    get_property(source_env GLOBAL PROPERTY SQLQ_TEST_SOURCE_ENVIRONMENT_${source})
    list(APPEND labels source:${source})
    get_property(source_fixtures GLOBAL PROPERTY SQLQ_TEST_SOURCE_FIXTURES_${source})
    list(APPEND fixtures ${source_fixtures})
    if(NOT source STREQUAL own)
      set(name ${db}-${source})
    endif()
  endif()
  set(test integration.${suite}.${name})
  add_test(NAME ${test} COMMAND ${command})
  set(env ${SQLQ_TEST_ENVIRONMENT} SQLQ_TEST_DATABASE=${db} SQLQ_TEST_SOURCE=${source}
    ${source_env} ${T_ENVIRONMENT})
  set_tests_properties(${test} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
    FIXTURES_REQUIRED "${fixtures}" ENVIRONMENT "${env}")
  if(no_server)
    set_tests_properties(${test} PROPERTIES DISABLED TRUE)
  endif()
  set(registered ${registered} ${name} PARENT_SCOPE)
endfunction()

function(sqlq_database_test suite)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;DATABASES;WITHOUT;FIXTURES;LIBS;ENVIRONMENT" ${ARGN})
  if(NOT T_SOURCES AND NOT T_DATABASES)
    message(FATAL_ERROR "sqlq_database_test(${suite}): declare SOURCES (a capture suite) or DATABASES")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  get_property(all_dbs GLOBAL PROPERTY SQLQ_TEST_DBS)
  get_property(all_sources GLOBAL PROPERTY SQLQ_TEST_SOURCES)
  foreach(word ${T_SOURCES} ${T_DATABASES})
    if(NOT word IN_LIST all_dbs AND NOT word IN_LIST all_sources)
      message(FATAL_ERROR "sqlq_database_test(${suite}): ${word} is neither a database (${all_dbs}) nor a source (${all_sources})")
    endif()
  endforeach()
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${suite}.sh)
    set(command bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${suite}.sh)
  else()
    add_executable(itest_${suite} integration/test_${suite}.c)
    target_link_libraries(itest_${suite} PRIVATE ${T_LIBS} sqlq_testdb sqlq_testsupport PkgConfig::CMOCKA)
    set(command itest_${suite})
  endif()
  # Every combination that has a server here: registered, left out with a reason, or missing.
  set(registered "")
  set(left_out "")
  set(missing "")
  set(sources ${all_sources})
  if(NOT T_SOURCES)
    set(sources "")
  endif()
  foreach(source ${sources} "")
    if(T_SOURCES AND source STREQUAL "")
      continue()
    endif()
    set(dbs ${all_dbs})
    if(source)
      get_property(dbs GLOBAL PROPERTY SQLQ_TEST_SOURCE_DBS_${source})
    endif()
    foreach(db ${dbs})
      set(combo ${db})
      if(source)
        set(combo ${db}-${source})
      endif()
      get_property(no_server GLOBAL PROPERTY SQLQ_TEST_DB_NO_SERVER_${db})
      sqlq_database_test_why(why "${db}" "${source}" "${T_WITHOUT}")
      # A database without a server here only when the suite names it.
      if(no_server AND NOT db IN_LIST T_DATABASES)
        continue()
      endif()
      if((NOT source OR source IN_LIST T_SOURCES) AND (NOT T_DATABASES OR db IN_LIST T_DATABASES)
         AND NOT why)
        sqlq_database_test_add(${suite} "${command}" ${db} "${source}")
      elseif(why)
        list(APPEND left_out "${why}")
      else()
        list(APPEND missing ${combo})
      endif()
    endforeach()
  endforeach()
  set(kind capture)
  if(NOT T_SOURCES)
    set(kind sql)
  endif()
  string(REPLACE ";" " " registered "${registered}")
  list(REMOVE_DUPLICATES left_out)
  string(REPLACE ";" " / " left_out "${left_out}")
  string(REPLACE ";" " " missing "${missing}")
  file(APPEND ${SQLQ_DATABASE_TESTS_MANIFEST} "${kind}|${suite}|${registered}|${left_out}|${missing}\n")
endfunction()

# The manifest's check (after every tests/*.cmake registered its suites).
add_test(NAME unit.database_tests COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_database_tests.sh
  ${SQLQ_DATABASE_TESTS_MANIFEST})
set_tests_properties(unit.database_tests PROPERTIES LABELS unit TIMEOUT 30)
