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
# Functions: report RESULT NAME [NOTE] (RESULT: PASS, FAIL, SKIP or NA; NOTE: the reason of a
# skip, or a short fact such as the run time); report_detail (stdin: lines shown under the
# last result, e.g. a failure's output); report_note TEXT (a line of context);
# report_end WHAT (the counts, and the status to exit with: 1 when a run failed);
# skip_reason LOG (the reason a program that exited 77 gives in its output).
#
# SKIP is for a run that could not happen here for a reason a person can act on (a missing
# library, package or build feature). NA is for a run that does not apply by design (an option
# of ours on 5.3.0; a program whose child processes set their own MALLOC_CONF, under a
# variant): it is no test result -- a "# not applicable:" comment in TAP -- and is counted
# apart, so that the summary's SKIP lines are only the actionable ones.
: "${REPORT_TAP:=0}"
rep_n=0
rep_pass=0
rep_fail=0
rep_skip=0
rep_na=0
rep_failed=

report() {
  if [ "$1" = NA ]; then
    rep_na=$((rep_na + 1))
    if [ "$REPORT_TAP" = 1 ]; then
      echo "# not applicable: $2${3:+ ($3)}"
    else
      echo "N/A: $2${3:+ ($3)}"
    fi
    return 0
  fi
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

# skip_reason LOG: why a program skipped. The harness's "[ SKIP ] test: reason" lines when
# there are any (the distinct reasons, the first one and how many others), else the last line
# of output (without a leading "SKIP: " or "skipped: "); never the harness's count line.
skip_reason() {
  why=$(sed -n 's/^\[ SKIP \] [^:]*: //p' "$1" | awk '!seen[$0]++')
  if [ -n "$why" ]; then
    n=$(printf '%s\n' "$why" | wc -l)
    first=$(printf '%s\n' "$why" | head -n 1)
    if [ "$n" -gt 1 ]; then
      echo "$first (and $((n - 1)) other reason(s))"
    else
      echo "$first"
    fi
    return 0
  fi
  grep -v -e '^[[:space:]]*$' -e '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' "$1" |
    tail -n 1 | sed -e 's/^SKIP: //' -e 's/^skipped: //'
}

report_end() {
  na=
  [ "$rep_na" -eq 0 ] || na=", $rep_na not applicable by design"
  if [ "$REPORT_TAP" = 1 ]; then
    echo "# $1: $rep_pass passed, $rep_fail failed, $rep_skip skipped$na"
    [ "$rep_fail" -eq 0 ] || printf '# failed:%s\n' "$rep_failed" | sed '2,$s/^/#/'
    # A runner that had nothing to run still answers in TAP: one skip.
    if [ "$rep_n" -eq 0 ]; then
      echo "1..0 # SKIP nothing to run"
    else
      echo "1..$rep_n"
    fi
  else
    echo
    echo "$1: $rep_pass passed, $rep_fail failed, $rep_skip skipped$na"
    [ "$rep_fail" -eq 0 ] || echo "failed:$rep_failed"
  fi
  [ "$rep_fail" -eq 0 ]
}
