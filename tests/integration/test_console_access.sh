#!/usr/bin/env bash
# Who may use the console: tests/integration/console_access.js says what it checks.
set -euo pipefail
: "${SQLQ_BIN:?run through ctest}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PLAYWRIGHT_BROWSERS_PATH=/nonexistent
exec node "$SQLQ_SOURCE_DIR/tests/integration/console_access.js"
