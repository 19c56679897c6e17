#!/usr/bin/env bash
# The console in the system Chromium against the fixtures' PostgreSQL and Azurite and a SQLite
# file: tests/integration/console_browser.js says what it checks. Screenshots go to
# $SQLQ_CONSOLE_SHOTS when set (docs/console.md shows the ones a run wrote).
set -euo pipefail
: "${SQLQ_BIN:?run through ctest}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PLAYWRIGHT_BROWSERS_PATH=/nonexistent
exec node "$SQLQ_SOURCE_DIR/tests/integration/console_browser.js"
