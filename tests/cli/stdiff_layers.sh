#!/usr/bin/env bash
# stdiff folds its per-tensor lines by layer pattern: pairs whose names
# differ only in the layer number and that compare alike are one line,
# h.{0..3}.attn.c_attn.weight, with the worst figures over the group; -v
# lists every pair so folded, -vv each tensor; --markdown is the same as a
# GitHub table. Two random GPT-2 snapshots of 4 layers (gpt2export --random,
# seeds 1 and 2, one also in BF16 by stconvert) and A in BF16 with one
# element of one layer broken by hand.
. "$(dirname "$0")/lib.bash"
S=$BIN/stdiff
for t in stdiff gpt2export stconvert; do
	[ -x "$BIN/$t" ] || { echo "$t not built"; exit 77; }
done
mkdir -p "$TMP/stdiff" "$TMP/w"
cd "$TMP/w" || exit 2 # relative paths keep the golden output independent of $TMP
R="--layers 4 --heads 2 --width 16 --vocab 64 --context 8"
"$BIN/gpt2export" --random s1 $R --seed 1 >/dev/null 2>&1 &&
	"$BIN/gpt2export" --random s2 $R --seed 2 >/dev/null 2>&1 &&
	"$BIN/stconvert" --to bf16 s1 s1b >/dev/null 2>&1 &&
	"$BIN/stconvert" --to bf16 s2 s2b >/dev/null 2>&1 || { echo "no snapshots"; exit 2; }

# The shapes (width 16, 4 width MLP, vocab 64, context 8), by hand: c_attn
# [16, 48], c_proj [16, 16], c_fc [16, 64], mlp.c_proj [64, 16].
W='h\.\{0\.\.3\}'

# Two seeds: every weight differs, one line per weight of the four layers.
golden stdiff/layers_s1_s2 1 "$S" s1 s2
expect_out stdiff/layers_s1_s2 "^differs: $W\.attn\.c_attn\.weight \(F32, 4 tensors, 3072 elements\): [0-9]+ mismatched \([0-9.]+%\), max abs [0-9.e-]+, max rel [0-9.e+-]+, worst in h\.[0-3]\.attn\.c_attn\.weight$"
expect_out stdiff/layers_s1_s2 "^differs: $W\.mlp\.c_proj\.weight \(F32, 4 tensors, 4096 elements\): "
expect_out stdiff/layers_s1_s2 '^differs: wte\.weight \(F32, 1024 elements\): '
[ "$(grep -c '^differs: ' "$TMP/stdiff/layers_s1_s2.out")" = 6 ] && ok || fail "layers_s1_s2: not 6 lines"
# -vv: the 18 weights, one line each (biases and norms are identical).
run layers_vv 1 "$S" -vv s1 s2
[ "$(grep -c '^differs: ' "$TMP/layers_vv.out")" = 18 ] && ok || fail "layers_vv: not 18 lines"
[ "$(grep -c '^identical: ' "$TMP/layers_vv.out")" = 34 ] && ok || fail "layers_vv: not 34 identical"

# A group's figures are its members' worst: max of max abs and max rel, sum
# of mismatched, sum of elements, against the -vv lines (numpy checks those:
# stdiff_values.sh). %.4g rounds monotonically, so the max of the printed
# figures is the printed max.
check_group() { # NAME PATTERN-OF-MEMBERS GROUP-NAME
	local want got
	want=$(grep -E "^differs: $2 " "$TMP/layers_vv.out" | awk '
		{ for (i = 1; i <= NF; i++) {
			if ($i == "mismatched") m += $(i - 1)
			if ($i == "abs" && $(i - 1) == "max") { v = $(i + 1); sub(",", "", v); if (v + 0 > a) { a = v + 0; sa = v } }
			if ($i == "rel" && $(i - 1) == "max") { v = $(i + 1); sub(",", "", v); if (v + 0 > r) { r = v + 0; sr = v } }
			if ($i == "elements):") e += substr($(i - 1), 1)
		} }
		END { print e, m, sa, sr }')
	got=$(grep -F "differs: $3 " "$TMP/$1.out" | sed -E 's/.*, ([0-9]+) elements\): ([0-9]+) mismatched .*max abs ([^,]+), max rel ([^,]+),.*/\1 \2 \3 \4/')
	[ -n "$got" ] && [ "$got" = "$want" ] && ok || fail "$1: $3: '$got', members give '$want'"
}
for w in attn.c_attn attn.c_proj mlp.c_fc mlp.c_proj; do
	check_group stdiff/layers_s1_s2 "h\.[0-3]\.${w//./\\.}\.weight" "h.{0..3}.$w.weight"
done

# Against the other seed in BF16: the dtype pair is part of the line.
golden stdiff/layers_s1_s2b 1 "$S" s1 s2b
expect_out stdiff/layers_s1_s2b "^differs: $W\.mlp\.c_fc\.weight \(F32 vs BF16, 4 tensors, 4096 elements\): .*, B is not exactly A rounded to BF16$"
expect_out stdiff/layers_s1_s2b '^34 tensors F32 → BF16, all exactly A rounded$'

# A in BF16, exactly rounded: nothing differs, no line but the tally.
run layers_round 0 "$S" s1 s1b
[ "$(grep -c '^differs: \|^within tolerance: ' "$TMP/layers_round.out")" = 0 ] && ok || fail "layers_round: pair lines"
expect_out layers_round '^52 tensors F32 → BF16, all exactly A rounded$'
# -v: every pair, 12 groups of four layers and the 4 others; -vv: 52.
run layers_round_v 0 "$S" -v s1 s1b
[ "$(grep -c '^within tolerance: ' "$TMP/layers_round_v.out")" = 16 ] && ok || fail "layers_round_v: not 16 lines"
expect_out layers_round_v "^within tolerance: $W\.ln_1\.weight \(F32 vs BF16, 4 tensors, 64 elements\): 0 mismatched \(0%\), max abs 0, max rel 0, B is exactly A rounded to BF16$"
run layers_round_vv 0 "$S" -vv s1 s1b
[ "$(grep -c '^within tolerance: ' "$TMP/layers_round_vv.out")" = 52 ] && ok || fail "layers_round_vv: not 52 lines"

# One element of layer 1's c_fc weight broken (BF16 3.0, 0x4040, written
# over the first): that pair differs and is a line of its own; the three
# other layers stay a group of their own with -v.
cp -r s1b broken
f=broken/model.safetensors
n=$(od -An -t u8 -N8 "$f" | tr -d ' ')
begin=$(head -c $((8 + n)) "$f" | tail -c "$n" |
	grep -o '"h\.1\.mlp\.c_fc\.weight":{[^}]*}' | sed -E 's/.*"data_offsets":\[([0-9]+),.*/\1/')
[ -n "$begin" ] || { echo "no offset for h.1.mlp.c_fc.weight"; exit 2; }
printf '\x40\x40' | dd of="$f" bs=1 seek=$((8 + n + begin)) conv=notrunc 2>/dev/null
golden stdiff/layers_broken 1 "$S" s1 broken
expect_out stdiff/layers_broken '^differs: h\.1\.mlp\.c_fc\.weight \(F32 vs BF16, 1024 elements\): 1 mismatched \(0\.0977%\), .*worst at \[0, 0\], B is not exactly A rounded to BF16$'
[ "$(grep -c '^differs: ' "$TMP/stdiff/layers_broken.out")" = 1 ] && ok || fail "layers_broken: not one line"
run layers_broken_v 1 "$S" -v s1 broken
expect_out layers_broken_v '^within tolerance: h\.\{0,2,3\}\.mlp\.c_fc\.weight \(F32 vs BF16, 3 tensors, 3072 elements\): 0 mismatched \(0%\), .*, B is exactly A rounded to BF16$'
expect_out layers_broken_v '^differs: h\.1\.mlp\.c_fc\.weight \(F32 vs BF16, 1024 elements\): 1 mismatched'
[ "$(grep -c '^within tolerance: \|^differs: ' "$TMP/layers_broken_v.out")" = 17 ] && ok || fail "layers_broken_v: not 17 lines"

# --markdown: the same lines as a table, names escaped (c\_attn).
golden stdiff/layers_s1_s2b_markdown 1 "$S" --markdown s1 s2b
expect_out stdiff/layers_s1_s2b_markdown '^\| h\.\{0\.\.3\}\.attn\.c\\_attn\.weight \(4 tensors\) \| F32 vs BF16 \| differs: [0-9]+ of 3072 mismatched, B is not exactly A rounded to BF16 \| [0-9.e-]+ \| [0-9.e+-]+ \|$'
golden stdiff/layers_broken_v_markdown 1 "$S" -v --markdown s1 broken
run md_json 2 "$S" --markdown --json s1 s2
expect_err md_json '^stdiff: --json cannot be combined with --markdown$'
run md_first 2 "$S" --markdown --first s1 s2
run md_quiet 1 "$S" -q --markdown s1 s2
[ -s "$TMP/md_quiet.out" ] && fail "-q --markdown: stdout not empty" || ok
# JSON is unchanged: one entry per tensor.
run layers_json 1 "$S" --json s1 s2
[ "$(grep -o '"name": "h\.[0-3]\.attn\.c_attn\.weight"' "$TMP/layers_json.out" | wc -l)" = 4 ] && ok ||
	fail "layers_json: not one entry per tensor"
finish
