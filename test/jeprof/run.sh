#!/bin/sh
# run.sh: `make check`'s entry for bin/jeprof: runs test/jeprof/jeprof_test.py (see its header
# for what it checks).  Skips (77) when python3 is absent, since bin/jeprof needs it too.
# Environment: JEPROF_LIBS (libraries to dump with; default Debian's 5.3.0 and the build's),
# DEBIAN_JEPROF (default /usr/bin/jeprof), VERBOSE=1 (details of passing checks too).
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 is not installed (bin/jeprof needs it)"
  exit 77
fi
exec python3 "$top_srcdir/test/jeprof/jeprof_test.py"
