# stinfo's views of a checkpoint: the shards folded into one line (-v:
# each), --tensors GLOB (the summary's tables, --all, --stats, --json) and
# --markdown. The figures are checked against what the fixture files
# themselves hold (their sizes, the header lengths in their first 8 bytes)
# and --tensors against bash's own glob matching of the names --json
# lists; the goldens (tests/golden/stinfo/) hold the wording.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/stinfo" || exit 1
mkdir -p "$TMP/stinfo"

# --- shards: one line, -v lists each ---------------------------------------------
golden stinfo/snap-verbose 0 "$S" -v snap
run verbose-long 0 "$S" --verbose snap
cmp -s "$TMP/stinfo/snap-verbose.out" "$TMP/verbose-long.out" && ok || fail "--verbose differs from -v"
run folded 0 "$S" snap
# header N: the little-endian u64 at the start of the file.
hlen() { od -An -t u8 -N 8 "$1" | tr -d ' '; }
size=0 headers=0
for f in snap/model-0000?-of-00002.safetensors; do
  size=$((size + $(stat -c %s "$f"))) headers=$((headers + $(hlen "$f")))
done
# group N: N with thousands separators (6216 -> 6,216).
group() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
line=$(grep '^shards:' "$TMP/folded.out")
case "$line" in
  *"2 files, "*"($(group $size) B), headers "*"($(group $headers) B)") ok ;;
  *) fail "shards line '$line': expected 2 files, $size B, headers $headers B" ;;
esac
grep -q '^file:' "$TMP/folded.out" && fail "folded summary still lists a file:" || ok
# The same metadata in every shard: shown once.
[ "$(grep -c '^  metadata:  format: pt$' "$TMP/folded.out")" = 1 ] && ok || fail "metadata not shown once"
# Shards whose metadata differ: said, not shown from one of them. Built
# here: an 8-byte little-endian header length, the header padded to 8.
mkshard() { # FILE JSON: a shard holding one F32 [1] tensor of value 1.0
  local h=$2
  while [ $(( ${#h} % 8 )) != 0 ]; do h="$h "; done
  printf "\\x$(printf %02x ${#h})\\0\\0\\0\\0\\0\\0\\0%s\\0\\0\\x80\\x3f" "$h" >"$1"
}
mkdir -p "$TMP/meta"
mkshard "$TMP/meta/model-00001-of-00002.safetensors" \
  '{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
mkshard "$TMP/meta/model-00002-of-00002.safetensors" \
  '{"__metadata__":{"format":"np"},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
printf '%s' '{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}' \
  >"$TMP/meta/model.safetensors.index.json"
run meta-differs 0 "$S" "$TMP/meta"
expect_out meta-differs '^  metadata:  differs between shards \(-v lists each\)$'
run meta-differs-v 0 "$S" -v "$TMP/meta"
expect_out meta-differs-v '^  metadata:  format: np$'
# PyTorch shards: their bytes, no headers; a format said once, or that it differs.
golden stinfo/torch-sharded 0 "$S" ../torch/sharded
golden stinfo/torch-sharded3 0 "$S" ../torch/sharded3
expect_out stinfo/torch-sharded3 '^  format:    differs between shards \(-v lists each\)$'
# One file: nothing to fold.
run one-file 0 "$S" tiny.safetensors
grep -q '^file:        tiny.safetensors$' "$TMP/one-file.out" && ok || fail "one file: no file: line"

# --- --tensors -----------------------------------------------------------------
# names_matching GLOB FILE: the names of FILE's --json tensors that bash's
# [[ == ]] (fnmatch semantics: '*' crosses dots) matches, sorted.
run all-json 0 "$S" --json snap
names_matching() {
  sed -n 's/^    {"name": "\([^"]*\)".*/\1/p' "$TMP/all-json.out" | while read -r n; do
    # shellcheck disable=SC2053
    [[ $n == $1 ]] && echo "$n"
  done | sort
}
json_names() { sed -n 's/^    {"name": "\([^"]*\)".*/\1/p' "$1" | sort; }
for g in 'h.1.*' '*.weight' 'h.[02].attn.*' 'step' '*mlp*'; do
  n=tensors-json-${g//[^a-z0-9]/_}
  run "$n" 0 "$S" --json --tensors "$g" snap
  if diff <(names_matching "$g") <(json_names "$TMP/$n.out") >/dev/null; then ok; else
    fail "--tensors '$g': --json lists other tensors than the glob matches"; fi
  want=$(names_matching "$g" | wc -l)
  grep -q "^  \"total\": {\"tensors\": $want, " "$TMP/$n.out" && ok || fail "--tensors '$g': total is not $want tensors"
done
# Repeated: the union.
run tensors-two 0 "$S" --json --tensors 'wte.*' --tensors 'wpe.*' snap
[ "$(json_names "$TMP/tensors-two.out" | tr '\n' ' ')" = "wpe.weight wte.weight " ] && ok || fail "two --tensors: not the union"
# The summary: the selection's line, dtype table and tensor table.
golden stinfo/snap-tensors 0 "$S" --tensors 'h.1.*' snap
expect_out stinfo/snap-tensors '^selected: +4 of 27 tensors, 180 parameters, 592 B$'
# --all lists each of them.
run tensors-all 0 "$S" --all --tensors '*.ln_1.weight' snap
[ "$(grep -c '^h\.[0-9]\.ln_1\.weight ' "$TMP/tensors-all.out")" = 6 ] && ok || fail "--all --tensors: not 6 rows"
# --stats reads and shows only the selected tensors; their figures are
# those of the whole run.
run stats-all 0 "$S" --stats --json tiny.safetensors
run stats-sel 0 "$S" --stats --json --tensors 'wte.weight' tiny.safetensors
[ "$(grep -c '"stats"' "$TMP/stats-sel.out")" = 1 ] && ok || fail "--stats --tensors: not one tensor"
diff <(grep '"name": "wte.weight"' "$TMP/stats-all.out" | sed 's/,$//') \
  <(grep '"name": "wte.weight"' "$TMP/stats-sel.out" | sed 's/,$//') \
  >/dev/null && ok || fail "--stats --tensors: wte.weight's stats differ from the whole run's"
run stats-table 0 "$S" --stats --tensors 'h.0.*' tiny.safetensors
[ "$(grep -c '^h\.0\.' "$TMP/stats-table.out")" = 4 ] && ok || fail "--stats --tensors: table is not the 4 h.0 tensors"
grep -q '^wte\.weight' "$TMP/stats-table.out" && fail "--stats --tensors lists wte.weight" || ok
# Nothing matches: a typo, not an empty answer.
golden stinfo/tensors-none 2 "$S" --tensors 'nope*' snap

# --- --markdown ------------------------------------------------------------------
golden stinfo/tiny-markdown 0 "$S" --markdown tiny.safetensors && [ ! -s "$TMP/stinfo/tiny-markdown.err" ] && ok || fail "markdown: stderr"
golden stinfo/snap-markdown-stats 0 "$S" -m --stats --tensors 'h.0.*' snap
# Every table row has its heading's cell count, the second row aligns.
md_ok=1
awk -F'|' '/^\|/ { if (!inrow) { cols = NF; inrow = 1; row = 0 } row++;
    line = $0; gsub(/\\\|/, "", line); n = split(line, a, "|");
    if (n != cols) bad = 1
    if (row == 2 && $0 !~ /^(\|(:--|--:))+\|$/) bad = 1; next }
  { inrow = 0 } END { exit bad }' "$TMP/stinfo/tiny-markdown.out" || md_ok=0
[ $md_ok = 1 ] && ok || fail "--markdown: a row with another cell count, or no alignment row"
# A name's '_' is escaped (Markdown emphasis), its shape's brackets are not.
expect_out stinfo/tiny-markdown '^\| h\.\{0\.\.5\}\.attn\.c\\_attn\.weight \| F32 \| \[4, 12\] \| 6 x 48 \| - \|$'

# --- --help names them --------------------------------------------------------
run help 0 "$S" --help
for opt in --verbose --tensors --markdown --memory --context --dump --output; do
  expect_out help "^ .*$opt"
done

# --- what does not go together -------------------------------------------------
golden stinfo/usage-markdown-json 2 "$S" --markdown --json tiny.safetensors
golden stinfo/usage-tensors-check 2 "$S" --check --tensors 'h.*' tiny.safetensors

finish
