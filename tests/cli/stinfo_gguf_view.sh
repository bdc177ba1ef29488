# stinfo's views of a GGUF file and of a split set: --tensors GLOB (the
# type, tensor and statistics tables, --all, --json) and --markdown (the
# tables as GitHub tables, with their bits/weight column). --tensors is
# checked against bash's own glob matching of the names --json lists, the
# selection's figures against sums of the --json entries, its statistics
# against the unfiltered run's, bits/weight against the ggml block sizes
# (Q8_0: 34 bytes for 32 weights, 8.5; F32 32); the goldens
# (tests/golden/stinfo_gguf/) hold the wording.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/gguf_split" || exit 1
mkdir -p "$TMP/stinfo_gguf"
SET=gpt2-00002-of-00003.gguf # any part stands for the set

# --- --tensors: the same names as bash's glob ----------------------------------
run all-json 0 "$S" --json whole.gguf
json_names() { sed -n 's/^    {"name": "\([^"]*\)".*/\1/p' "$1"; }
names_matching() { # GLOB: the names of whole.gguf that [[ == ]] matches
	json_names "$TMP/all-json.out" | while read -r n; do
		# shellcheck disable=SC2053
		[[ $n == $1 ]] && echo "$n"
	done
}
# sum FIELD FILE: the sum of the "FIELD": N of FILE's --json tensors.
sum() { sed -n "s/^    {\"name\": .*\"$1\": \\([0-9]*\\).*/\\1/p" "$2" | awk '{s += $1} END {print s + 0}'; }
for g in 'blk.1.*' '*.weight' 'blk.[01].attn_*' 'output_norm.bias' '*norm*'; do
	for p in whole.gguf $SET; do
		n=json-${p%%.*}-${g//[^a-z0-9]/_}
		run "$n" 0 "$S" --json --tensors "$g" "$p"
		if diff <(names_matching "$g") <(json_names "$TMP/$n.out") >/dev/null; then ok; else
			fail "$p --tensors '$g': --json lists other tensors than the glob matches"; fi
		want="\"tensors\": $(names_matching "$g" | wc -l), \"parameters\": $(sum parameters "$TMP/$n.out"), \"bytes\": $(sum bytes "$TMP/$n.out"),"
		grep -qF "  \"total\": {$want" "$TMP/$n.out" && ok || fail "$p --tensors '$g': total is not {$want ...}"
	done
done
# Repeated: the union, in the file's order.
run json-two 0 "$S" --json -T 'output_norm.*' -T 'token_embd.*' $SET
[ "$(json_names "$TMP/json-two.out" | tr '\n' ' ')" = "token_embd.weight output_norm.weight output_norm.bias " ] &&
	ok || fail "two --tensors: not the union"
# The selection's bits/weight: its bytes * 8 over its weights (only Q8_0: 8.5).
run json-q8 0 "$S" --json -T '*ffn_up.weight' whole.gguf
expect_out json-q8 '^  "total": \{"tensors": 2, "parameters": 8192, "bytes": 8704, "bits_per_weight": 8\.5, "by_dtype": \{"Q8_0": '

# --- the summary: the whole's totals, a selected: line, the selection's tables --
run full 0 "$S" $SET
run sel 0 "$S" --tensors 'blk.1.*' $SET
diff <(sed -n '/^tensors:/,/^bits\/weight:/p' "$TMP/full.out") \
	<(sed -n '/^tensors:/,/^bits\/weight:/p' "$TMP/sel.out") >/dev/null &&
	ok || fail "--tensors changed the whole's totals"
# Its figures: the --json entries' sums.
run sel-json 0 "$S" --json --tensors 'blk.1.*' $SET
group() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
params=$(sum parameters "$TMP/sel-json.out") bytes=$(sum bytes "$TMP/sel-json.out")
expect_out sel "^selected: +12 of 28 tensors, .*\($(group "$params")\) parameters, .*\($(group "$bytes") B\)\$"
# The type table holds the selection's types: 8 F32 (32 bits) and 4 Q8_0 (8.5).
expect_out sel '^F32 +8 +416 +.* +32$'
expect_out sel '^Q8_0 +4 +12\.3K \(12,288\) +.* +8\.5$'
golden stinfo_gguf/split-tensors 0 "$S" --tensors 'blk.1.*' $SET
# The set lists the tensors of the part each is in.
expect_out stinfo_gguf/split-tensors '^blk\.1\.ffn_up\.weight +Q8_0 +8\.5 +\[128, 32\] +4096 +gpt2-00003-of-00003\.gguf$'
# --all lists each, compacted rows otherwise.
run all 0 "$S" --all --tensors '*.attn_norm.weight' whole.gguf
[ "$(grep -c '^blk\.[01]\.attn_norm\.weight ' "$TMP/all.out")" = 2 ] && ok || fail "--all --tensors: not 2 rows"
run compact 0 "$S" --tensors '*.attn_norm.weight' whole.gguf
expect_out compact '^blk\.\{0,1\}\.attn_norm\.weight +F32 +32 +\[32\] +2 x 32 +- *$'

# --- --stats: only the selection read, the same figures ---------------------------
run stats-all 0 "$S" --stats --json whole.gguf
for p in whole.gguf $SET; do
	run stats-sel 0 "$S" --stats --json --tensors '*ffn_down*' "$p"
	[ "$(grep -c '"stats"' "$TMP/stats-sel.out")" = 4 ] && ok || fail "$p --stats --tensors: not 4 tensors"
	for t in blk.0.ffn_down.weight blk.1.ffn_down.bias; do
		# The same tensor and figures; a part's file and offsets are its own.
		diff <(grep "\"name\": \"$t\"" "$TMP/stats-all.out" | sed 's/,$//; s/"file": .*"stats"/"stats"/') \
			<(grep "\"name\": \"$t\"" "$TMP/stats-sel.out" | sed 's/,$//; s/"file": .*"stats"/"stats"/') \
			>/dev/null && ok || fail "$p --stats --tensors: $t's stats differ from the whole run's"
	done
done
run stats-table 0 "$S" --stats --tensors 'blk.0.*' $SET
[ "$(grep -c '^blk\.0\.' "$TMP/stats-table.out")" = 12 ] && ok || fail "--stats --tensors: table is not the 12 blk.0 tensors"
grep -q '^token_embd' "$TMP/stats-table.out" && fail "--stats --tensors lists token_embd.weight" || ok

# --- nothing matches: a typo, exit 2, nothing on stdout -----------------------------
golden stinfo_gguf/tensors-none 2 "$S" --tensors 'nope*' -T 'nor*' whole.gguf
[ ! -s "$TMP/stinfo_gguf/tensors-none.out" ] && ok || fail "no match: printed on stdout"
run none-json 2 "$S" --json --tensors 'nope*' $SET
expect_err none-json "^stinfo: $SET: no tensor matches --tensors 'nope\\*'\$"

# --- --markdown --------------------------------------------------------------------
golden stinfo_gguf/split-markdown 0 "$S" --markdown --tensors 'blk.0.*' $SET
[ ! -s "$TMP/stinfo_gguf/split-markdown.err" ] && ok || fail "markdown: stderr"
cd "$TESTDATA/gguf" || exit 1
golden stinfo_gguf/all-types-markdown 0 "$S" -m ok_all_types.gguf
golden stinfo_gguf/unknown-markdown-stats 0 "$S" -m --stats warn_type57_between.gguf
# Every table row has its heading's cell count, the second row aligns, and a
# line that is not a row is apart from the table (else Markdown takes it in).
for f in split-markdown all-types-markdown unknown-markdown-stats; do
	awk -F'|' '/^\|/ { if (!inrow) { cols = NF; inrow = 1; row = 0 } row++;
	    line = $0; gsub(/\\\|/, "", line); n = split(line, a, "|");
	    if (n != cols) bad = 1
	    if (row == 2 && $0 !~ /^(\|(:--|--:))+\|$/) bad = 1; next }
	  inrow && $0 != "" { bad = 1 } { inrow = 0 } END { exit bad }' "$TMP/stinfo_gguf/$f.out" &&
		ok || fail "--markdown $f: a row with another cell count, no alignment row, or text against a table"
done
# bits/weight of each type from its ggml block: F32 32, F16 16, BF16 16,
# Q8_0 34 B / 32 = 8.5, Q4_K 144 B / 256 = 4.5, I32 32; '_' escaped.
for tb in 'F32 32' 'F16 16' 'BF16 16' 'Q8\\_0 8.5' 'Q4\\_K 4.5' 'I32 32'; do
	set -- $tb
	expect_out stinfo_gguf/all-types-markdown "^\\| $1 \\| 1 \\| [^|]* \\| [^|]* \\| ${2//./\\.} \\|\$"
done
expect_out stinfo_gguf/all-types-markdown '^\| q8 \| Q8\\_0 \| 8\.5 \| \[2, 32\] \| 64 \| 192 \|$'
# The file's: 256 B * 8 over 334 weights.
expect_out stinfo_gguf/all-types-markdown '^\| total \| 6 \| 334 \| 256 B \| 6\.132 \|$'
# A type libst does not know: no bits/weight, no bytes.
expect_out stinfo_gguf/unknown-markdown-stats '^\| unknown types \| 1 \| 64 \| unknown \| - \|$'
# --markdown with --json: two outputs.
run md-json 2 "$S" --markdown --json ok_all_types.gguf

finish
