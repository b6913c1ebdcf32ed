#!/bin/bash
# Configure and build distenv in the source tree (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure --enable-werror >/dev/null
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" check TESTS= >/dev/null # build the unit tests, run none
