#!/bin/sh
# Regenerates the autotools files (configure, Makefile.in, libtool glue).
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=none >/dev/null
echo "autogen: done; now run ./configure"
