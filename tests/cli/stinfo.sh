# stinfo: options, summary, --all, --json, --check and exit codes, compared
# with tests/golden/stinfo/ (stdout, stderr where a .err golden exists, exit
# code). The fixtures are testdata/stinfo/, made by gen_fixtures.py; every
# path is given relative to that directory so the output does not depend on
# where the tree lives. --stats is in stinfo_stats.sh.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/stinfo" || exit 1
mkdir -p "$TMP/stinfo"

# no_err NAME: the run NAME wrote nothing on stderr.
no_err() {
  if [ -s "$TMP/$1.err" ]; then
    fail "$1: unexpected stderr:"; sed 's/^/  /' "$TMP/$1.err" | head -5 >&2
  else ok; fi
}

# --- options -----------------------------------------------------------------
run help 0 "$S" --help && no_err help
[ "$(head -n1 "$TMP/help.out")" = "Usage: stinfo [OPTION]... PATH..." ] && ok || fail "help: first line"
for opt in --all --json --check --stats --threads --version; do
  expect_out help "$opt"
done
run help_short 0 "$S" -h && no_err help_short
cmp -s "$TMP/help.out" "$TMP/help_short.out" && ok || fail "-h differs from --help"
run version 0 "$S" --version && no_err version
expect_out version '^stinfo \(libst\) [0-9]+\.[0-9]+\.[0-9]+$'

golden stinfo/usage-no-path 2 "$S"
golden stinfo/usage-bad-option 2 "$S" --bogus tiny.safetensors
golden stinfo/usage-bad-short 2 "$S" -x tiny.safetensors
golden stinfo/usage-check-stats 2 "$S" --check --stats tiny.safetensors
golden stinfo/usage-threads 2 "$S" --stats --threads 0 tiny.safetensors
golden stinfo/usage-threads-missing 2 "$S" tiny.safetensors --threads

# --- summary -------------------------------------------------------------------
golden stinfo/tiny 0 "$S" tiny.safetensors && no_err stinfo/tiny
golden stinfo/tiny-all 0 "$S" --all tiny.safetensors && no_err stinfo/tiny-all
golden stinfo/moe 0 "$S" moe.safetensors
golden stinfo/names 0 "$S" names.safetensors
golden stinfo/dtypes 0 "$S" dtypes.safetensors
golden stinfo/snap 0 "$S" snap
golden stinfo/snap-all 0 "$S" -a snap
# The index path and the directory describe the same checkpoint.
run snap-index 0 "$S" snap/model.safetensors.index.json
diff <(tail -n +2 "$TMP/stinfo/snap.out") <(tail -n +2 "$TMP/snap-index.out") >/dev/null \
  && ok || fail "snap via its index differs from snap"
golden stinfo/two-paths 0 "$S" moe.safetensors dtypes.safetensors
golden stinfo/unknown-field 0 "$S" unknown-field.safetensors && no_err stinfo/unknown-field

# --- JSON --------------------------------------------------------------------
golden stinfo/tiny-json 0 "$S" --json tiny.safetensors && no_err stinfo/tiny-json
golden stinfo/names-json 0 "$S" --json names.safetensors
golden stinfo/dtypes-json 0 "$S" --json dtypes.safetensors
golden stinfo/snap-json 0 "$S" --json snap
# --all changes nothing in JSON, which always lists every tensor.
# Several PATHs: still one JSON document, an array of the single ones.
run json-two 0 "$S" --json tiny.safetensors snap
{ echo '['; cat "$TMP/stinfo/tiny-json.out"; echo ','; cat "$TMP/stinfo/snap-json.out"; echo ']'; } >"$TMP/json-two.want"
cmp -s "$TMP/json-two.want" "$TMP/json-two.out" && ok || fail "--json with two paths is not the array of both"
run tiny-json-all 0 "$S" --json --all tiny.safetensors
cmp -s "$TMP/stinfo/tiny-json.out" "$TMP/tiny-json-all.out" && ok || fail "--json --all differs"

# --- unreadable and invalid input without --check: exit 2 ----------------------
golden stinfo/missing 2 "$S" no-such-file.safetensors
golden stinfo/open-truncated 2 "$S" bad/truncated.safetensors
golden stinfo/open-lfs 2 "$S" bad/lfs-pointer.safetensors
golden stinfo/open-html 2 "$S" --json bad/html.safetensors
golden stinfo/open-missing-shard 2 "$S" bad/snap-missing-shard
# A bad path among good ones: the good ones are still described.
golden stinfo/open-mixed 2 "$S" moe.safetensors bad/short.safetensors dtypes.safetensors
mkdir "$TMP/empty"
run open-empty-dir 2 "$S" "$TMP/empty"
expect_err open-empty-dir "^stinfo: .*/empty: "

# --- --check -------------------------------------------------------------------
for f in tiny.safetensors moe.safetensors names.safetensors dtypes.safetensors \
         stats.safetensors snap snap/model.safetensors.index.json; do
  n=check-ok-${f//\//_}
  run "$n" 0 "$S" --check "$f" && no_err "$n"
  expect_out "$n" "^$f: OK\$"
done
golden stinfo/check-unknown-field 0 "$S" --check unknown-field.safetensors
for f in short truncated trailing lfs-pointer html huge-header bad-dtype \
         overlap size-mismatch duplicate meta-number several bad-json; do
  golden "stinfo/check-$f" 1 "$S" --check "bad/$f.safetensors"
done
for d in snap-missing-shard snap-total-size snap-escape snap-unlisted \
         snap-bad-shard two-files; do
  golden "stinfo/check-$d" 1 "$S" -c "bad/$d"
done
golden stinfo/check-missing 2 "$S" --check no-such-file.safetensors
# Several paths: each is checked; 2 (unreadable) outweighs 1 (invalid).
golden stinfo/check-multi 2 "$S" --check tiny.safetensors bad/overlap.safetensors \
  no-such-file.safetensors snap
golden stinfo/check-multi-invalid 1 "$S" --check bad/trailing.safetensors tiny.safetensors

# --- a full disk: the write error is reported, exit 2 ----------------------------
if [ -w /dev/full ]; then
  "$S" tiny.safetensors >/dev/full 2>"$TMP/full.err"
  [ $? = 2 ] && ok || fail "full: exit status is not 2"
  expect_err full '^stinfo: error writing standard output: '
fi

# --- a 300 GB sparse file: only the header is read -----------------------------
# 75e9 F32 elements = 300e9 bytes; the file is a hole past the header, so it
# needs no disk space. Skipped where the filesystem has no sparse files.
hdr='{"w":{"dtype":"F32","shape":[75000000000],"data_offsets":[0,300000000000]}}'
while [ $(( ${#hdr} % 8 )) != 0 ]; do hdr="$hdr "; done
big=$TMP/big.safetensors
printf "\\x$(printf %02x ${#hdr})\\0\\0\\0\\0\\0\\0\\0%s" "$hdr" >"$big"
if truncate -s $((8 + ${#hdr} + 300000000000)) "$big" 2>/dev/null; then
  run big 0 "$S" "$big" && no_err big
  expect_out big '^bytes: +300\.0 GB \(300,000,000,000 B\)$'
  expect_out big '^parameters: +75\.0B \(75,000,000,000\)$'
  run big-check 0 "$S" --check "$big"
  rm -f "$big"
fi

finish
