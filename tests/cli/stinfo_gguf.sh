# stinfo on GGUF files: the summary, --all, --json, --stats (goldens in
# tests/golden/stinfo_gguf/, checked by hand against gen_fixtures.py's
# values), --check on every fixture of testdata/gguf/MANIFEST.tsv (its
# verdict and message, which the manifest states independently), --check
# against ggml's own verdict on each (GGML.tsv), and a
# sparse 300 GB file that only a header-only reader answers at once.
# Paths are relative to testdata/gguf so the output does not depend on
# where the tree lives.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/gguf" || exit 1
mkdir -p "$TMP/stinfo_gguf"

golden stinfo_gguf/all-types 0 "$S" ok_all_types.gguf
golden stinfo_gguf/all-types-all 0 "$S" --all ok_all_types.gguf
golden stinfo_gguf/all-types-json 0 "$S" --json ok_all_types.gguf
golden stinfo_gguf/all-types-stats 0 "$S" --stats ok_all_types.gguf
# Threads take whole tensors, each summed in element order by one of
# them: the figures do not depend on how many there are.
golden stinfo_gguf/all-types-stats 0 "$S" --stats --threads 1 ok_all_types.gguf
golden stinfo_gguf/all-types-stats 0 "$S" --stats --threads 5 ok_all_types.gguf
# The same values as safetensors (stconvert writes them: quantized types
# as F32) give the same figures: the same chunks, the same sums.
if [ -x "$BIN/stconvert" ]; then
	run to_st 0 "$BIN/stconvert" -q ok_all_types.gguf "$TMP/stinfo_gguf/all.safetensors"
	run stats_gguf 0 "$S" --stats ok_all_types.gguf
	run stats_st 0 "$S" --stats "$TMP/stinfo_gguf/all.safetensors"
	# name, then min .. zeros (the type column differs: Q8_0 vs F32)
	figures() { awk '/^name / {t = 1; next} t && NF == 9 {$2 = ""; print}' "$TMP/$1.out" | sort; }
	if [ -n "$(figures stats_gguf)" ] && [ "$(figures stats_gguf)" = "$(figures stats_st)" ]; then
		ok
	else
		fail "GGUF --stats and its safetensors copy differ"
	fi
fi
golden stinfo_gguf/gpt2-q8_0 0 "$S" judge/expected-q8_0.gguf
golden stinfo_gguf/gpt2-q8_0-json 0 "$S" --json judge/expected-q8_0.gguf
golden stinfo_gguf/two-json 0 "$S" --json ok_v2.gguf ok_no_tensors.gguf

# --check: the manifest's verdict and message for every fixture.
while IFS=$'\t' read -r name expect needle what; do
	case $name in '#'*) continue ;; esac
	case $expect in
	ok) run "check_$name" 0 "$S" --check "$name" &&
	    expect_out "check_$name" "^$name: OK\$" ;;
	warning) run "check_$name" 0 "$S" --check "$name" &&
	    expect_out "check_$name" "^$name: OK \(1 warning\)\$" &&
	    if grep -qF -- "$needle" "$TMP/check_$name.err"; then ok; else
	        fail "check $name: no '$needle'"; fi ;;
	error) run "check_$name" 1 "$S" --check "$name" &&
	    expect_out "check_$name" "^$name: INVALID" &&
	    if grep -qF -- "stinfo: $name: " "$TMP/check_$name.err" &&
	       grep -qF -- "$needle" "$TMP/check_$name.err"; then ok; else
	        fail "check $name: no '$needle'"; fi
	    # Without --check: one line, exit 2.
	    run "open_$name" 2 "$S" "$name" &&
	    if [ "$(wc -l < "$TMP/open_$name.err")" = 1 ]; then ok; else
	        fail "open $name: not one line"; fi ;;
	esac
done < MANIFEST.tsv
# --check agrees with ggml's loader (GGML.tsv, recorded by ggml_verdicts.py
# from gguf_init_from_file): ggml refuses -> INVALID, or a warning that
# llama.cpp will refuse it; ggml accepts -> neither. bad_dims_overflow.gguf
# is refused on purpose (ggml's element count wraps to 0; check_gguf.c).
while IFS=$'\t' read -r name verdict why; do
	case $name in '#'*) continue ;; esac
	"$S" --check "$name" >"$TMP/ggml_$name.out" 2>"$TMP/ggml_$name.err"
	rc=$?
	refuse=0
	grep -qF 'llama.cpp will refuse this: ' "$TMP/ggml_$name.err" && refuse=1
	case $verdict:$name in
	refuse:*) if [ $rc = 1 ] || { [ $rc = 0 ] && [ $refuse = 1 ]; }; then ok
	          else fail "ggml refuses $name ($why): stinfo rc $rc"; fi ;;
	accept:bad_dims_overflow.gguf) [ $rc = 1 ] && ok || fail "$name: rc $rc" ;;
	accept:*) if [ $rc = 0 ] && [ $refuse = 0 ]; then ok
	          else fail "ggml accepts $name: stinfo rc $rc"; fi ;;
	*) fail "GGML.tsv: '$verdict' for $name" ;;
	esac
done < GGML.tsv
run check_missing 2 "$S" --check no-such.gguf
expect_err check_missing "no-such.gguf: No such file"

# Header only: ok_v2.gguf with its tensor grown to 75e9 F32 elements (its
# one dim is the 8 bytes after the name "w" and n_dims 1), 300 GB sparse.
big=$TMP/big.gguf
cp ok_v2.gguf "$big"
at=$(grep -obUaP 'w\x01\x00\x00\x00' ok_v2.gguf | head -1 | cut -d: -f1)
printf '\x00\x2e\x59\x76\x11\x00\x00\x00' |
	dd of="$big" bs=1 seek=$((at + 5)) conv=notrunc status=none
truncate -s $((128 + 300000000000)) "$big" 2>/dev/null ||
	{ echo "no sparse files here"; finish; }
# (Run bare under tests/valgrind.sh: valgrind cannot map 300 GB.)
run big 0 timeout 10 "${ST_REAL_BIN:-$BIN}/stinfo" "$big"
expect_out big '^parameters: +75\.0B \(75,000,000,000\)$'
expect_out big '^bytes: +300\.0 GB \(300,000,000,000 B\)$'
finish
