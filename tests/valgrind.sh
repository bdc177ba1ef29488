#!/usr/bin/env bash
# A valgrind (memcheck) pass over the CLI tests:
#
#   tests/valgrind.sh [SCRIPT...]      (BUILD=<build dir>, default build/)
#
# runs each CLI test script (default: every tests/cli/*.sh but the three
# below) with every tool it starts from $BIN under
#   valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
# through lib.bash's ST_WRAP wrappers, one log per tool run. An invalid read
# or write, a use of an uninitialised value, a bad free or a definite leak
# is an error: the tool exits 99 (so the test's check of its exit code
# fails too), and this script prints the command line and valgrind's
# report of each run that had one. Possible leaks and memory still
# reachable at exit are not errors (a tool that exits from cli_die leaves
# its allocations to the kernel). Exit 0: no error and every script
# passed; 1 otherwise. At the end: scripts, tool runs, errors, seconds.
#
# Not run under valgrind: fault.sh (its LD_PRELOAD shim counts the calls a
# tool makes, which valgrind's own start-up changes), gpt2export_kill.sh
# and stconvert_fail.sh (they stop or kill writers at timed moments, which
# valgrind's slowdown shifts: stconvert_fail.sh's retries ran for many
# minutes under valgrind in CI) and install.sh (runs the installed copies, not $BIN). Use a Release or Debug
# build without ST_SANITIZE (the sanitizers and valgrind do not mix).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD:-$root/build}
build=$(cd "$build" && pwd) # absolute: the tests run tools from other folders
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 2; }
[ -x "$build/bin/stinfo" ] || { echo "valgrind.sh: no tools in $build/bin (BUILD=...)" >&2; exit 2; }
if [ $# -gt 0 ]; then
	scripts=("$@")
else
	scripts=()
	for s in "$here"/cli/*.sh; do
		case ${s##*/} in fault.sh | gpt2export_kill.sh | stconvert_fail.sh | install.sh) continue ;; esac
		scripts+=("$s")
	done
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/st-valgrind.XXXXXX")
chmod 1777 "$logs" # tests run some tools as another user
export ST_WRAP="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --num-callers=30 --log-file=$logs/vg.%p.log"
export BIN=$build/bin TESTDATA=$root/testdata GOLDEN=$here/golden CLI=$here/cli ST_TEST_CFLAGS=
start=$(date +%s)
failed=()
for s in "${scripts[@]}"; do
	t0=$(date +%s)
	bash "$s" >"$logs/${s##*/}.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
		echo "${s##*/}: $([ "$rc" = 77 ] && echo skipped || echo passed) ($(($(date +%s) - t0)) s)"
	else
		echo "${s##*/}: FAILED, exit $rc ($(($(date +%s) - t0)) s; log: $logs/${s##*/}.log)"
		grep -E '^FAIL' "$logs/${s##*/}.log" | head -5 | sed 's/^/  /'
		failed+=("${s##*/}")
	fi
done
runs=0
errors=0
for log in "$logs"/vg.*.log; do
	[ -e "$log" ] || continue
	runs=$((runs + 1))
	if grep -q 'ERROR SUMMARY: [1-9]' "$log"; then
		errors=$((errors + 1))
		echo "== valgrind error: $(sed -n 's/^==[0-9]*== Command: //p' "$log" | head -1)"
		sed -n '/^==[0-9]*== Command: /,$p' "$log" | sed 1d | grep -v '^==[0-9]*== *$' | head -40
	else
		rm -f "$log"
	fi
done
echo "valgrind: ${#scripts[@]} scripts, $runs tool runs, $errors with errors, ${#failed[@]} scripts failed, $(($(date +%s) - start)) s (logs: $logs)"
[ "$errors" = 0 ] && [ ${#failed[@]} = 0 ]
