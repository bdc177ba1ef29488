# Split GGUF sets (testdata/gguf_split, made by gen_split.py with gguf-py's
# writer, which checks there that the three parts hold exactly whole.gguf's
# 28 tensors, 10, 10 and 8): any part opens the whole set, and stinfo,
# --stats, --all --json, stdiff --map gpt2 and gpt2export's GGUF import
# see what they see in the unsplit file; --check of every broken set of
# MANIFEST.tsv names the part, and exits 1 (2 without --check).
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo D=$BIN/stdiff G=$BIN/gpt2export
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/gguf_split" || exit 1
mkdir -p "$TMP/stinfo_gguf_split"
same() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; diff "$2" "$3" | head -5 >&2; fi; }

# Listing: every part names the set of 28 tensors.
for k in 1 2 3; do
	p=gpt2-0000$k-of-00003.gguf
	run "list_$k" 0 "$S" "$p" &&
		expect_out "list_$k" '^tensors: +28$'
	expect_out "list_$k" "^path: +$p\$"
	for j in 1 2 3; do
		expect_out "list_$k" "^file: +gpt2-0000$j-of-00003.gguf\$"
	done
done
run list_whole 0 "$S" whole.gguf
# Everything from the totals on is the unsplit file's, but the last column:
# the part (or "2 files") where the file has the offset (or "-").
sed -n '/^tensors:/,$p' "$TMP/list_1.out" |
	sed -E 's/ +(file|gpt2-0000[123]-of-00003\.gguf|[0-9] files)$//' >"$TMP/t_split"
sed -n '/^tensors:/,$p' "$TMP/list_whole.out" |
	sed -E '/^(name|[a-z_.{},0-9]+ +(F32|Q8_0)) /s/ +(offset|[0-9]+|-)$//' >"$TMP/t_whole"
same list "$TMP/t_split" "$TMP/t_whole"
expect_out list_1 '^token_embd\.weight +Q8_0 +8\.5 +\[512, 32\] +16384 +gpt2-00001-of-00003\.gguf$'
expect_out list_1 '^output_norm\.bias +F32 +32 +\[32\] +32 +gpt2-00003-of-00003\.gguf$'

# --stats: the same figures for every tensor.
run stats_split 0 "$S" --stats gpt2-00002-of-00003.gguf
run stats_whole 0 "$S" --stats whole.gguf
sed -n '/^tensors:/,$p' "$TMP/stats_split.out" >"$TMP/s_split"
sed -n '/^tensors:/,$p' "$TMP/stats_whole.out" >"$TMP/s_whole"
same stats "$TMP/s_split" "$TMP/s_whole"

# --all --json --stats: the same tensors, each in its part (10, 10, 8 as
# gguf-py's writer split them), offsets counting from its part's data.
run json_split 0 "$S" --all --json --stats gpt2-00003-of-00003.gguf
run json_whole 0 "$S" --all --json --stats whole.gguf
strip() { grep '"name": ' "$TMP/$1.out" | sed 's/, "file": .*, "data_offsets": \[[0-9]*, [0-9]*\]//'; }
strip json_split >"$TMP/j_split"
strip json_whole >"$TMP/j_whole"
same json "$TMP/j_split" "$TMP/j_whole"
for kn in 1:10 2:10 3:8; do
	k=${kn%:*} n=${kn#*:}
	got=$(grep -c "\"file\": \"gpt2-0000$k-of-00003.gguf\"" "$TMP/json_split.out")
	if [ "$got" = "$n" ]; then ok; else fail "json: $got tensors in part $k, expected $n"; fi
	expect_out json_split "\\{\"path\": \"gpt2-0000$k-of-00003.gguf\", \"header_bytes\""
done
expect_out json_split '"split\.count": \{"type": "uint16", "value": 3\}'
expect_out json_split '^  "total": \{"tensors": 28, '

# stdiff --map gpt2 against the snapshot the GGUF was made from, and
# gpt2export's import: as with the unsplit file.
J=$TESTDATA/gguf/judge
run diff_split 0 "$D" --map gpt2 -v gpt2-00002-of-00003.gguf "$J/model"
run diff_whole 0 "$D" --map gpt2 -v whole.gguf "$J/model"
same diff "$TMP/diff_split.out" "$TMP/diff_whole.out"
expect_out diff_split '^28 tensors compared through the GPT-2 name map'
run diff_json_split 0 "$D" --map gpt2 --json gpt2-00001-of-00003.gguf "$J/model"
run diff_json_whole 0 "$D" --map gpt2 --json whole.gguf "$J/model"
same diff_json "$TMP/diff_json_split.out" "$TMP/diff_json_whole.out"
if [ -x "$G" ]; then
	run export_split 0 "$G" gpt2-00003-of-00003.gguf "$TMP/from_split"
	run export_whole 0 "$G" whole.gguf "$TMP/from_whole"
	for f in model.safetensors config.json; do
		same "export $f" "$TMP/from_split/$f" "$TMP/from_whole/$f"
	done
fi

# Wording (regression only: the figures are checked above against whole.gguf).
golden stinfo_gguf_split/list 0 "$S" gpt2-00002-of-00003.gguf
golden stinfo_gguf_split/check-missing 1 "$S" --check missing/gpt2-00001-of-00003.gguf
golden stinfo_gguf_split/check-extra 1 "$S" --check extra/gpt2-00001-of-00003.gguf

# --check: the manifest's verdict, the part named, the message.
while IFS=$'\t' read -r path expect part needle what; do
	case $path in '#'*) continue ;; esac
	n=${path//\//_}
	case $expect in
	ok) run "check_$n" 0 "$S" --check "$path" &&
	    expect_out "check_$n" "^$path: OK\$"
	    run "open_$n" 0 "$S" "$path" ;;
	error|check) run "check_$n" 1 "$S" --check "$path" &&
	    expect_out "check_$n" "^$path: INVALID" &&
	    if grep -qF -- "stinfo: $part: $needle" "$TMP/check_$n.err"; then ok; else
	        fail "check $path: no 'stinfo: $part: $needle'"
	        sed 's/^/  stderr: /' "$TMP/check_$n.err" >&2; fi
	    if [ "$expect" = error ]; then
	        # Without --check: the same one line, exit 2.
	        run "open_$n" 2 "$S" "$path" &&
	        if [ "$(wc -l <"$TMP/open_$n.err")" = 1 ] &&
	           grep -qF -- "stinfo: $part: $needle" "$TMP/open_$n.err"; then ok; else
	            fail "open $path: not one line naming $part"; fi
	    else
	        run "open_$n" 0 "$S" "$path"
	    fi ;;
	esac
done < MANIFEST.tsv
finish
