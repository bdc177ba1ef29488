# stconvert with directories: snapshot copies and config.json, shards split
# as huggingface_hub splits them, shards <-> one file, replacing an earlier
# layout, in-place directory conversion.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"

# ---- snapshot directory -> directory -------------------------------------------
run snap 0 "$SC" -v --to bf16 "$D/snap" "$TMP/snap-bf16"
expect_same snap_config "$D/snap.config.bf16.json" "$TMP/snap-bf16/config.json"
for f in tokenizer_config.json vocab.txt sub/README.md; do
  expect_same "snap_$f" "$D/snap/$f" "$TMP/snap-bf16/$f"
done
expect_absent snap_bin "$TMP/snap-bf16/pytorch_model.bin"
expect_absent snap_index "$TMP/snap-bf16/model.safetensors.index.json"
expect_err snap 'not copied: .*/snap/pytorch_model.bin \(weights in another file\)'
expect_err snap 'copied .*/snap/config.json with torch_dtype bfloat16'
"$SC" -q --to bf16 "$D/snap/model.safetensors" "$TMP/snap-model.safetensors"
expect_same snap_model "$TMP/snap-model.safetensors" "$TMP/snap-bf16/model.safetensors"
no_temps snap "$TMP"
# Without --to the config is copied as it is.
run snap_relayout 0 "$SC" "$D/snap" "$TMP/snap-same"
expect_same snap_relayout "$D/snap/config.json" "$TMP/snap-same/config.json"
expect_same snap_relayout_model "$D/snap/model.safetensors" "$TMP/snap-same/model.safetensors"
# A directory is made with the usual mode (umask applies), not mkdtemp's 0700.
mode=$(umask 022; "$SC" -q "$D/snap" "$TMP/snap-mode" && stat -c %a "$TMP/snap-mode")
if [ "$mode" = 755 ]; then ok; else fail "snap mode: $mode, expected 755"; fi

# Sharded snapshot -> a directory keeps its shards (SPEC: one output shard
# per input shard); torch_dtype added to a config that has none, in the
# config's own style.
run sharded 0 "$SC" --to f16 "$D/snap-sharded" "$TMP/sharded-f16"
expect_same sharded_config "$D/snap-sharded.config.f16.json" "$TMP/sharded-f16/config.json"
n=$(ls "$TMP/sharded-f16" | tr '\n' ' ')
if [ "$n" = "config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json " ]
then ok; else fail "sharded: files $n"; fi
run sharded_same 1 "$BIN/stdiff" "$D/snap-sharded" "$TMP/sharded-f16" # f32.special overflows
expect_out sharded_same '^3 tensors compared: 2 identical, 0 within tolerance, 1 differ; 0 only in A, 0 only in B'
expect_out sharded_same 'f32.special .*B is exactly A rounded to F16$'
expect_err sharded '^stconvert: in:  3 tensors, 232 bytes \(232 B\), 2 files \+ index$'

# Snapshot files behind symlinks into the Hugging Face cache's blobs/ are
# copied as regular files with their content.
hf="$TMP/hub/models--org--tiny"
mkdir -p "$hf/blobs" "$hf/snapshots/abc/sub"
cp "$D/snap/config.json" "$hf/blobs/aa"; cp "$D/snap/model.safetensors" "$hf/blobs/bb"
echo notes > "$hf/blobs/cc"
ln -s ../../blobs/aa "$hf/snapshots/abc/config.json"
ln -s ../../blobs/bb "$hf/snapshots/abc/model.safetensors"
ln -s ../../../blobs/cc "$hf/snapshots/abc/sub/notes.txt"
run cache 0 "$SC" --to bf16 "$hf/snapshots/abc" "$TMP/cache-bf16"
expect_same cache_config "$D/snap.config.bf16.json" "$TMP/cache-bf16/config.json"
if [ ! -L "$TMP/cache-bf16/config.json" ]; then ok; else fail "cache: config.json is a link"; fi
expect_same cache_model "$TMP/snap-model.safetensors" "$TMP/cache-bf16/model.safetensors"
expect_same cache_sub "$hf/blobs/cc" "$TMP/cache-bf16/sub/notes.txt"
expect_not_err cache 'warning'

# Nothing outside IN is read through a link: links to a private folder, to
# a file above IN, to / and to blobs/ of a folder that is not a cache are
# left out with a warning naming each; links inside IN are followed.
mkdir -p "$TMP/secret/keys" "$TMP/evil/inner"
echo private > "$TMP/secret/keys/id_ed25519"; echo key > "$TMP/secret/key"
cp "$D/snap/config.json" "$D/snap/model.safetensors" "$TMP/evil/"
echo inside > "$TMP/evil/inner/readme.txt"
ln -s "$TMP/secret/keys" "$TMP/evil/ssh"
ln -s ../secret/key "$TMP/evil/key"
ln -s / "$TMP/evil/root"
ln -s ../../secret/key "$TMP/evil/inner/up"
ln -s inner/readme.txt "$TMP/evil/readme.txt"
ln -s inner "$TMP/evil/also-inner"
run links 0 "$SC" --to bf16 "$TMP/evil" "$TMP/evil-bf16"
n=$(cd "$TMP/evil-bf16" && find . | sort | tr '\n' ' ')
want='. ./also-inner ./also-inner/readme.txt ./config.json ./inner ./inner/readme.txt ./model.safetensors ./readme.txt '
if [ "$n" = "$want" ]; then ok; else fail "links: output holds '$n', expected '$want'"; fi
expect_err links "^stconvert: warning: not copied: $TMP/evil/ssh: a link to $TMP/secret/keys, outside $TMP/evil\$"
expect_err links "^stconvert: warning: not copied: $TMP/evil/key: a link to ../secret/key, outside $TMP/evil\$"
expect_err links "^stconvert: warning: not copied: $TMP/evil/root: a link to /, outside $TMP/evil\$"
expect_err links "^stconvert: warning: not copied: $TMP/evil/inner/up: a link to ../../secret/key, outside $TMP/evil\$"
if grep -rq private "$TMP/evil-bf16"; then fail "links: a private file was copied"; else ok; fi
# blobs/ of a folder not laid out as a cache is outside IN like any other.
mkdir -p "$TMP/fake/snapshots/r" "$TMP/fake/blobs"; echo private > "$TMP/fake/blobs/x"
cp "$D/snap/config.json" "$D/snap/model.safetensors" "$TMP/fake/snapshots/r/"
ln -s ../../blobs/x "$TMP/fake/snapshots/r/tokenizer.json"
run fake_cache 0 "$SC" "$TMP/fake/snapshots/r" "$TMP/fake-out"
expect_absent fake_cache "$TMP/fake-out/tokenizer.json"
expect_err fake_cache 'warning: not copied: .*/tokenizer.json: a link to ../../blobs/x, outside'

# A snapshot holding only pytorch_model.bin becomes a safetensors snapshot;
# converted in place, the .bin stays (it is another format, not a layout).
run torch_snap 0 "$SC" --to f16 "$TESTDATA/torch/snapshot" "$TMP/torch-snap"
n=$(ls "$TMP/torch-snap" | tr '\n' ' ')
if [ "$n" = "config.json model.safetensors " ]; then ok; else fail "torch_snap: files '$n'"; fi
expect_same torch_snap_config "$TMP/torch-snap/config.json" <(echo '{"torch_dtype": "float16"}')
cp -r "$TESTDATA/torch/snapshot" "$TMP/torch-ip"
run torch_inplace 0 "$SC" --force "$TMP/torch-ip" "$TMP/torch-ip"
n=$(ls "$TMP/torch-ip" | tr '\n' ' ')
if [ "$n" = "config.json model.safetensors pytorch_model.bin " ]; then ok; else fail "torch_inplace: files '$n'"; fi

# ---- --shard-size -------------------------------------------------------------
# Expected shards from gen_fixtures.py's copy of huggingface_hub's split.
check_shards() { # NAME EXPECTED_DIR ACTUAL_DIR
  local name=$1 exp=$2 act=$3 f want got
  want=$(cd "$exp" && ls | grep -v '\.nan$' | tr '\n' ' ')
  got=$(cd "$act" && ls | tr '\n' ' ')
  if [ "$want" = "$got" ]; then ok; else fail "$name: files '$got', expected '$want'"; fi
  expect_same "$name index" "$exp/model.safetensors.index.json" "$act/model.safetensors.index.json"
  for f in "$exp"/*.safetensors; do
    expect_same "$name $(basename "$f")" "$f" "$act/$(basename "$f")" "${f%.safetensors}.nan"
  done
}
run shard_bf16 0 "$SC" --to bf16 --shard-size 3000 "$D/mixed.safetensors" "$TMP/sh-bf16"
check_shards shard_bf16 "$D/shards-bf16" "$TMP/sh-bf16"
expect_err shard_bf16 'out: 22 tensors, 7111 bytes \(7.1 kB\), 3 files \+ index'
# A tensor larger than the limit gets a shard of its own, numbered before the
# shard that was being filled (huggingface_hub appends it at once).
run shard_none 0 "$SC" --shard-size 3kB "$D/mixed.safetensors" "$TMP/sh-none"
check_shards shard_none "$D/shards-none" "$TMP/sh-none"
# Binary units: 3KiB = 3072 bytes gives the same split here.
run shard_kib 0 "$SC" --shard-size 3KiB "$D/mixed.safetensors" "$TMP/sh-kib"
check_shards shard_kib "$D/shards-none" "$TMP/sh-kib"
# One shard: a plain model.safetensors and no index.
run shard_one 0 "$SC" --shard-size 5GB "$D/mixed.safetensors" "$TMP/sh-one"
n=$(ls "$TMP/sh-one" | tr '\n' ' ')
if [ "$n" = "model.safetensors " ]; then ok; else fail "shard_one: files $n"; fi
expect_same shard_one "$D/mixed.canonical.safetensors" "$TMP/sh-one/model.safetensors"

# ---- shards -> one file, byte-identical to a canonical input -------------------
run join_file 0 "$SC" "$TMP/sh-none" "$TMP/joined.safetensors"
expect_same join_file "$D/mixed.canonical.safetensors" "$TMP/joined.safetensors"
run join_index 0 "$SC" "$TMP/sh-none/model.safetensors.index.json" "$TMP/joined2.safetensors"
expect_same join_index "$D/mixed.canonical.safetensors" "$TMP/joined2.safetensors"
# A directory joins them only when --shard-size plans anew.
run join_dir 0 "$SC" --shard-size 1GB "$TMP/sh-none" "$TMP/joined-dir"
n=$(ls "$TMP/joined-dir" | tr '\n' ' ')
if [ "$n" = "model.safetensors " ]; then ok; else fail "join_dir: files $n"; fi
expect_same join_dir "$D/mixed.canonical.safetensors" "$TMP/joined-dir/model.safetensors"
"$SC" -q --shard-size 3000 "$D/mixed.canonical.safetensors" "$TMP/rt-sh"
"$SC" -q "$TMP/rt-sh" "$TMP/rt-one.safetensors"
expect_same roundtrip_shards "$D/mixed.canonical.safetensors" "$TMP/rt-one.safetensors"
# Without it the shards stay as they are, byte for byte.
run keep_dir 0 "$SC" "$TMP/sh-none" "$TMP/kept-dir"
n=$(ls "$TMP/kept-dir" | tr '\n' ' ')
want=$(ls "$TMP/sh-none" | tr '\n' ' ')
if [ "$n" = "$want" ]; then ok; else fail "keep_dir: files '$n', expected '$want'"; fi
for f in "$TMP"/sh-none/*.safetensors; do
	expect_same "keep_dir_${f##*/}" "$f" "$TMP/kept-dir/${f##*/}"
done

# ---- replacing an existing directory -----------------------------------------
# An earlier 4-shard layout, a user file and a user directory in OUT.
mkdir "$TMP/out"
cp "$D"/shards-none/*.safetensors "$D/shards-none/model.safetensors.index.json" "$TMP/out/"
echo "my notes" >"$TMP/out/notes.txt"; mkdir "$TMP/out/extra"; echo x >"$TMP/out/extra/x"
ln -s notes.txt "$TMP/out/link"
before=$(tree_sum "$TMP/out")
run dir_noforce 2 "$SC" --to bf16 --shard-size 3000 "$D/mixed.safetensors" "$TMP/out"
expect_err dir_noforce 'out: already exists \(use --force to replace it\)'
if [ "$(tree_sum "$TMP/out")" = "$before" ]; then ok; else fail "dir_noforce: OUT changed"; fi
# An empty directory holds nothing to lose: written into without --force
# (gpt2export's rule too: tools/fe's cli_check_out).
mkdir "$TMP/empty"
run dir_empty 0 "$SC" --to bf16 "$D/mixed.safetensors" "$TMP/empty"
expect_same dir_empty "$D/mixed.bf16.safetensors" "$TMP/empty/model.safetensors" "$D/mixed.bf16.nan"
run dir_force 0 "$SC" -v --force --to bf16 --shard-size 3000 "$D/mixed.safetensors" "$TMP/out"
n=$(ls "$TMP/out" | tr '\n' ' ')
want="extra link model-00001-of-00003.safetensors model-00002-of-00003.safetensors model-00003-of-00003.safetensors model.safetensors.index.json notes.txt "
if [ "$n" = "$want" ]; then ok; else fail "dir_force: files '$n', expected '$want'"; fi
expect_same dir_force_index "$D/shards-bf16/model.safetensors.index.json" "$TMP/out/model.safetensors.index.json"
if [ "$(cat "$TMP/out/notes.txt") $(cat "$TMP/out/extra/x") $(readlink "$TMP/out/link")" = "my notes x notes.txt" ]; then ok
else fail "dir_force: user files not kept"; fi
expect_err dir_force 'removed .*/out/model-00004-of-00004.safetensors \(earlier layout\)'
expect_err dir_force 'kept .*/out/notes.txt'
no_temps dir_force "$TMP"
# Back to one file: the three shards and the index go.
run dir_one 0 "$SC" --force --shard-size 1GB "$TMP/out" "$TMP/out"
n=$(ls "$TMP/out" | tr '\n' ' ')
if [ "$n" = "extra link model.safetensors notes.txt " ]; then ok; else fail "dir_one: files '$n'"; fi
expect_same dir_one "$D/mixed.bf16.safetensors" "$TMP/out/model.safetensors" "$D/mixed.bf16.nan"

# ---- in-place snapshot conversion -------------------------------------------------
cp -r "$D/snap" "$TMP/ip"; echo mine >"$TMP/ip/user.txt"
run inplace 0 "$SC" --force --to bf16 "$TMP/ip" "$TMP/ip"
expect_same inplace_config "$D/snap.config.bf16.json" "$TMP/ip/config.json"
expect_same inplace_model "$TMP/snap-model.safetensors" "$TMP/ip/model.safetensors"
expect_same inplace_user "$TMP/ip/user.txt" <(echo mine)
# Files stconvert does not copy stay where the user put them.
expect_same inplace_bin "$D/snap/pytorch_model.bin" "$TMP/ip/pytorch_model.bin"
no_temps inplace "$TMP"
# In place, a single checkpoint file with another name is the earlier layout.
mkdir "$TMP/ip2"; cp "$D/mixed.safetensors" "$TMP/ip2/weights.safetensors"
run inplace2 0 "$SC" --force --to bf16 "$TMP/ip2" "$TMP/ip2"
n=$(ls "$TMP/ip2" | tr '\n' ' ')
if [ "$n" = "model.safetensors " ]; then ok; else fail "inplace2: files '$n'"; fi
# "." as OUT: resolved to the real directory, swapped like any other.
cp -r "$D/snap" "$TMP/dot"
run dot 0 bash -c "cd '$TMP/dot' && '$SC' --force --to f16 . ."
if grep -q '"torch_dtype": "float16"' "$TMP/dot/config.json"; then ok; else fail "dot: config"; fi

# ---- OUT inside IN ------------------------------------------------------------------
cp -r "$D/snap" "$TMP/nest"
run nest 0 "$SC" --to bf16 "$TMP/nest" "$TMP/nest/bf16"
run nest2 0 "$SC" --force --to f16 "$TMP/nest" "$TMP/nest/bf16"
expect_absent nest2 "$TMP/nest/bf16/bf16"
if grep -q '"torch_dtype": "float16"' "$TMP/nest/bf16/config.json"; then ok; else fail "nest2: config"; fi

finish
