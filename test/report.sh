# report.sh: sourced by the test runners (test/integration/run.sh, test/stress/run.sh,
# test/preload/run.sh) so that each run of a program -- one program under one library and
# one MALLOC_CONF -- is one result, in one of two forms:
#
#   plain (default)   "PASS: name", "FAIL: name", "SKIP: name (reason)", then a count line:
#                     what a person running a runner by hand reads;
#   TAP (REPORT_TAP=1, set by the .tap wrappers `make check` runs through automake's
#                     tap-driver.sh)  "ok 3 - name", "not ok 4 - name",
#                     "ok 5 - name # SKIP reason", every other line a "# " comment and the
#                     plan "1..N" last, so that the `make check` summary counts every run
#                     and lists every skip with its reason.
#
# Functions: report RESULT NAME [NOTE] (RESULT: PASS, FAIL or SKIP; NOTE: the reason of a
# skip, or a short fact such as the run time); report_detail (stdin: lines shown under the
# last result, e.g. a failure's output); report_note TEXT (a line of context);
# report_end WHAT (the counts, and the status to exit with: 1 when a run failed).
: "${REPORT_TAP:=0}"
rep_n=0
rep_pass=0
rep_fail=0
rep_skip=0
rep_failed=

report() {
  rep_n=$((rep_n + 1))
  case $1 in
    PASS) rep_pass=$((rep_pass + 1)) ;;
    SKIP) rep_skip=$((rep_skip + 1)) ;;
    *)
      rep_fail=$((rep_fail + 1))
      rep_failed="$rep_failed
  $2"
      ;;
  esac
  if [ "$REPORT_TAP" = 1 ]; then
    # '#' starts a TAP directive: keep it out of names and notes.
    name=$(printf '%s' "$2" | tr '#' '_')
    note=$(printf '%s' "${3:-}" | tr '#' '_')
    case $1 in
      PASS) echo "ok $rep_n - $name${note:+ ($note)}" ;;
      SKIP) echo "ok $rep_n - $name # SKIP ${note:-skipped}" ;;
      *) echo "not ok $rep_n - $name${note:+ ($note)}" ;;
    esac
  else
    echo "$1: $2${3:+ ($3)}"
  fi
}

report_detail() {
  if [ "$REPORT_TAP" = 1 ]; then
    sed 's/^/#     | /'
  else
    sed 's/^/    | /'
  fi
}

report_note() {
  if [ "$REPORT_TAP" = 1 ]; then
    echo "# $*"
  else
    echo "$*"
  fi
}

report_end() {
  if [ "$REPORT_TAP" = 1 ]; then
    echo "# $1: $rep_pass passed, $rep_fail failed, $rep_skip skipped"
    [ "$rep_fail" -eq 0 ] || printf '# failed:%s\n' "$rep_failed" | sed '2,$s/^/#/'
    # A runner that had nothing to run still answers in TAP: one skip.
    if [ "$rep_n" -eq 0 ]; then
      echo "1..0 # SKIP nothing to run"
    else
      echo "1..$rep_n"
    fi
  else
    echo
    echo "$1: $rep_pass passed, $rep_fail failed, $rep_skip skipped"
    [ "$rep_fail" -eq 0 ] || echo "failed:$rep_failed"
  fi
  [ "$rep_fail" -eq 0 ]
}
