#!/usr/bin/env bash
# Fuzz for a fixed budget and grow the committed corpus:
#
#   tests/fuzz/run.sh SECONDS [TARGET...]
#
# builds the libFuzzer targets (build.sh, into $FUZZ_OUT), then runs each
# TARGET (default: all of them, one after the other) for SECONDS seconds
# of its own: the budget is per target, so the whole run takes about
# SECONDS x targets plus the build. Each target starts from
# tests/fuzz/corpus/<name>/ and writes what it finds into a scratch
# folder; afterwards the new inputs that add edge coverage to the corpus
# (-merge=1 -use_counters=0, as the committed corpus was made) and are at
# most $FUZZ_MAX_INPUT bytes (default 4096) are added to
# tests/fuzz/corpus/<name>/, so the corpus grows only by what matters.
# Per target one line: runs, exec/s, edges covered (cov), features (ft),
# new corpus entries, and the finding if any.
#
# A finding is a crash, a failed property, a sanitizer report, a timeout
# (-timeout=5 per input), excessive memory (-rss_limit_mb=2048) or a leak:
# the target stops, its input is kept (artifact path printed), the other
# targets still run, and the script exits 1. Exit 2: a usage or build
# error. Environment:
#   FUZZ_OUT        where the targets are built (default ${TMPDIR:-/tmp}/st-fuzz)
#   FUZZ_NO_BUILD=1 reuse the targets already in $FUZZ_OUT
#   FUZZ_MAX_INPUT  the largest new input merged into the corpus, in bytes
#   FUZZ_WORK       scratch folder (default: a new one under /dev/shm or /tmp,
#                   removed at the end unless something was found)
# Needs clang with libFuzzer (Debian: clang-14, libclang-rt-14-dev).
set -u
here=$(cd "$(dirname "$0")" && pwd)
all="fuzz_header fuzz_torch fuzz_legacy fuzz_tar fuzz_index fuzz_writer
fuzz_config_dtype fuzz_gguf fuzz_hf_vocab fuzz_quant fuzz_verify fuzz_arch fuzz_tokenizer
fuzz_encode fuzz_config fuzz_llmc fuzz_model fuzz_llama_model fuzz_order fuzz_dequant"

usage() {
	echo "usage: $0 SECONDS [TARGET...]   (SECONDS per target; targets: $(echo $all))" >&2
	exit 2
}
[ $# -ge 1 ] || usage
secs=$1
shift
case $secs in '' | *[!0-9]* | 0) usage ;; esac
targets=${*:-$all}
for t in $targets; do
	case " $(echo $all) " in *" $t "*) ;; *) echo "run.sh: unknown target $t" >&2; usage ;; esac
done

out=${FUZZ_OUT:-${TMPDIR:-/tmp}/st-fuzz}
cap=${FUZZ_MAX_INPUT:-4096}
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
	echo "== building the targets into $out"
	bash "$here/build.sh" "$out" >"$out.build.log" 2>&1 || {
		tail -20 "$out.build.log" >&2
		echo "run.sh: build failed (log: $out.build.log)" >&2
		exit 2
	}
fi

# The longest input each target is given: what its harness reads
# (README.md, "Build and run").
max_len() {
	case $1 in
	fuzz_torch | fuzz_legacy | fuzz_tar | fuzz_model | fuzz_llama_model) echo 8192 ;;
	fuzz_index | fuzz_verify) echo 2048 ;;
	fuzz_writer) echo 1024 ;;
	fuzz_dequant) echo 128 ;;
	fuzz_tokenizer) echo 20000 ;;
	fuzz_llmc) echo 32768 ;;
	*) echo 4096 ;;
	esac
}

shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
work=${FUZZ_WORK:-$(mktemp -d "$shm/st-fuzz-run.XXXXXX")}
mkdir -p "$work"
found=()
printf '%-18s %10s %8s %7s %7s %5s  %s\n' target runs exec/s cov ft new finding
for t in $targets; do
	name=${t#fuzz_}
	corpus=$here/corpus/$name
	bin=$out/$t
	[ -x "$bin" ] || { echo "run.sh: $bin not built" >&2; exit 2; }
	mkdir -p "$corpus" "$work/$name/new" "$work/$name/small" "$work/$name/art" "$work/$name/tmp"
	log=$work/$name/fuzz.log
	# Files the harnesses write go to a scratch TMPDIR (on /dev/shm: faster).
	TMPDIR=$work/$name/tmp "$bin" -max_total_time="$secs" -max_len="$(max_len "$t")" \
		-timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/$name/art/" "$work/$name/new" "$corpus" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	finding=""
	art=$(find "$work/$name/art" -type f | head -1)
	if [ "$rc" != 0 ] || [ -n "$art" ]; then
		finding="${art:-exit $rc, no input kept} (log: $log)"
		found+=("$t: $finding")
		[ -z "$runs" ] && runs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
	fi
	# New inputs under the size cap, merged by edge coverage.
	find "$work/$name/new" -type f -size -"$((cap + 1))"c -exec cp {} "$work/$name/small/" \;
	before=$(find "$corpus" -type f | wc -l)
	if [ -n "$(ls -A "$work/$name/small")" ]; then
		TMPDIR=$work/$name/tmp "$bin" -merge=1 -use_counters=0 -max_len="$(max_len "$t")" \
			-timeout=5 -rss_limit_mb=2048 "$corpus" "$work/$name/small" \
			>"$work/$name/merge.log" 2>&1 ||
			found+=("$t: the merge failed (log: $work/$name/merge.log)")
	fi
	after=$(find "$corpus" -type f | wc -l)
	printf '%-18s %10s %8s %7s %7s %5s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" \
		"${ft:-?}" "$((after - before))" "${finding:--}"
	rm -rf "$work/$name/tmp" "$work/$name/new" "$work/$name/small"
done
echo "corpus: $(find "$here/corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}') bytes in $(find "$here/corpus" -type f | wc -l) files"
if [ ${#found[@]} -gt 0 ]; then
	echo "findings (inputs kept in $work):" >&2
	printf '  %s\n' "${found[@]}" >&2
	exit 1
fi
[ -n "${FUZZ_WORK:-}" ] || rm -rf "$work"
exit 0
