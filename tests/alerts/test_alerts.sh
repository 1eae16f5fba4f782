#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs/alerts.yml: valid rules (promtool check rules) that fire as
# alerts_test.yml says on its synthetic series (promtool test rules).
# promtool comes with Debian's prometheus package (tests/run.sh installs it).
set -eu
here=$(dirname "$0")
if ! command -v promtool >/dev/null 2>&1; then
    echo "SKIP: promtool not installed (Debian package prometheus)"
    exit 77
fi
promtool check rules "$here/../../docs/alerts.yml"
promtool test rules "$here/alerts_test.yml"
