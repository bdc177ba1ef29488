# Shared by the CLI tests (tests/cli/*.sh), which ctest runs with
#   BIN=<build>/bin  TESTDATA=<src>/testdata  GOLDEN=<src>/tests/golden
# Source it:  . "$(dirname "$0")/lib.bash"
set -u
# The tools print their own non-ASCII symbols (stdiff's arrow) only in a
# UTF-8 locale (cli_utf8_locale): the golden files are in C.UTF-8's, which
# every Debian system has. A test of another locale sets LC_ALL itself.
export LC_ALL=C.UTF-8
: "${BIN:?BIN not set}" "${TESTDATA:?}" "${GOLDEN:?}"
fails=0
passes=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ST_WRAP="CMD ARGS..." (tests/valgrind.sh sets it): every program a test
# runs from $BIN runs as CMD ARGS... PROGRAM ARGS, through a wrapper of the
# same name in $TMP/wrap, which BIN then names (ST_REAL_BIN: the build's).
if [ -n "${ST_WRAP:-}" ]; then
  ST_REAL_BIN=$(cd "$BIN" && pwd) # absolute: tests run tools from other folders
  mkdir -p "$TMP/wrap"
  for prog in "$ST_REAL_BIN"/*; do
    [ -f "$prog" ] && [ -x "$prog" ] || continue
    printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$ST_WRAP" "$prog" >"$TMP/wrap/${prog##*/}"
    chmod +x "$TMP/wrap/${prog##*/}"
  done
  BIN=$TMP/wrap
fi

ok()   { passes=$((passes + 1)); }
fail() { fails=$((fails + 1)); echo "FAIL: $*" >&2; }

# run NAME EXPECTED_RC CMD...: run CMD in $TMP's parent-free cwd, keep
# stdout/stderr in $TMP/NAME.out / .err, check the exit code.
run() {
  local name=$1 want=$2; shift 2
  "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "$name: exit $rc, expected $want (cmd: $*)"
    sed 's/^/  stderr: /' "$TMP/$name.err" | head -5 >&2
    return 1
  fi
  ok
}

# golden NAME EXPECTED_RC CMD...: as run, then compare stdout (and stderr
# when $GOLDEN/NAME.err exists) with $GOLDEN/NAME.out. ST_UPDATE_GOLDEN=1
# writes the files instead (review the diff before committing).
golden() {
  local name=$1
  run "$@" || return 1
  if [ "${ST_UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$(dirname "$GOLDEN/$name")"
    cp "$TMP/$name.out" "$GOLDEN/$name.out"
    [ -s "$TMP/$name.err" ] && cp "$TMP/$name.err" "$GOLDEN/$name.err"
    return 0
  fi
  if ! diff -u "$GOLDEN/$name.out" "$TMP/$name.out" >&2; then
    fail "$name: stdout differs from golden"; return 1
  fi
  if [ -f "$GOLDEN/$name.err" ] && ! diff -u "$GOLDEN/$name.err" "$TMP/$name.err" >&2; then
    fail "$name: stderr differs from golden"; return 1
  fi
}

# expect_err NAME PATTERN: stderr of the last run NAME matches the regex.
expect_err() {
  if grep -Eq -- "$2" "$TMP/$1.err"; then ok; else
    fail "$1: stderr does not match /$2/:"; sed 's/^/  /' "$TMP/$1.err" | head -5 >&2; fi
}
# expect_not_err NAME PATTERN: no line of stderr of the last run NAME matches.
expect_not_err() {
  if ! grep -Eq -- "$2" "$TMP/$1.err"; then ok; else
    fail "$1: stderr matches /$2/:"; grep -E -- "$2" "$TMP/$1.err" | head -5 | sed 's/^/  /' >&2; fi
}
# expect_out NAME PATTERN: stdout of the last run NAME matches the regex.
expect_out() {
  if grep -Eq -- "$2" "$TMP/$1.out"; then ok; else
    fail "$1: stdout does not match /$2/:"; sed 's/^/  /' "$TMP/$1.out" | head -5 >&2; fi
}

# finish: print the tally and exit 0/1.
finish() {
  echo "$passes passed, $fails failed"
  [ "$fails" = 0 ]
}
