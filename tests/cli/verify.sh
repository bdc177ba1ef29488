# stinfo --verify and --hash on Hugging Face cache trees, plain folders
# with a SHA256SUMS sidecar and single files. The trees and the expected
# stdout, stderr and exit code of each (tests/golden/verify/) were made by
# testdata/verify/gen_verify.py with Python's hashlib, not by stinfo; the
# 50 MiB blobs are written here by make_blob.c from the seed in big.json,
# and the FIFOs are planted here (git cannot hold them).
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
V=$TESTDATA/verify
G=$GOLDEN/verify
cp -a "$V/cases" "$TMP/c" || exit 1
cd "$TMP/c" || exit 1

# The big blobs: make_blob writes big.head then splitmix64 bytes.
cc -O2 -o "$TMP/make_blob" "$V/make_blob.c" || { fail "make_blob: build"; finish; exit; }
json_field() { sed -n "s/.*\"$1\": \"\\{0,1\\}\\([0-9a-f]*\\)\"\\{0,1\\},\\{0,1\\}$/\\1/p" "$V/big.json"; }
n=$(json_field data_bytes); seed=$(json_field seed); flip=$(json_field flip)
good=$(json_field sha256)
[ -n "$good" ] && [ -n "$n" ] && ok || fail "big.json: fields"
c1=1111111111111111111111111111111111111111
"$TMP/make_blob" "$V/big.head" "$n" "$seed" >"big-clean/models--t--m/blobs/$good" || fail "make_blob"
"$TMP/make_blob" "$V/big.head" "$n" "$seed" "$flip" >"flipped/models--t--m/blobs/$good" || fail "make_blob flip"
mkfifo "fifo/models--t--m/blobs/ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" \
       "fifo/models--t--m/snapshots/$c1/pipe.safetensors" || fail "mkfifo"

# Nothing is ever written: a listing of every path, size and mtime before.
snapshot_tree() { find . -path ./fifo -prune -o -printf '%p %s %T@ %l\n' | sort; }
snapshot_tree >"$TMP/before"

# case NAME [ARGS]: stinfo --verify NAME against its goldens.
case_golden() {
  local name=$1; shift
  local want; want=$(cat "$G/$name.rc")
  if run "verify-$name" "$want" "$S" --verify "$@" "$name"; then
    if [ "${ST_UPDATE_GOLDEN:-0}" = 1 ]; then
      cp "$TMP/verify-$name.out" "$G/$name.out"; cp "$TMP/verify-$name.err" "$G/$name.err"
      return
    fi
    diff -u "$G/$name.out" "$TMP/verify-$name.out" >&2 && ok || fail "$name: stdout differs"
    diff -u "$G/$name.err" "$TMP/verify-$name.err" >&2 && ok || fail "$name: stderr differs"
  fi
}
for name in clean big-clean flipped truncated incomplete dangling absolute \
            escaping replaced missing-ref missing-file nosymlink \
            nosymlink-corrupt sidecar sidecar-bad gguf torch; do
  case_golden "$name"
done
# A bad blob is also named by the snapshot file it is, with the command
# that fetches it again.
expect_err verify-flipped "; it is snapshots/$c1/model\.safetensors: fetch it again with 'huggingface-cli download t/m model\.safetensors --revision $c1 --force-download'\$"
# A FIFO is never opened: a read would block until the timeout.
case_golden fifo
# One thread gives the same answer as several.
case_golden truncated --threads 1
case_golden clean --threads 3

# A GGUF file cut short: the GGUF check runs on what the hash read.
mkdir "$TMP/g" && head -c 100 gguf/model.gguf >"$TMP/g/cut.gguf"
run gguf-cut 1 "$S" --verify "$TMP/g"
expect_err gguf-cut "^stinfo: $TMP/g/cut.gguf: "
expect_out gguf-cut ': 1 problem \(folder; 1 file read, 0 bytes hashed, 1 with no hash'

# A PyTorch checkpoint cut short: checked as a zip after its hash.
mkdir "$TMP/t" && head -c 600 "$TESTDATA/torch/state.bin" >"$TMP/t/pytorch_model.bin"
cp "$TESTDATA/torch/state.bin" "$TMP/t/training_args.bin"
head -c 600 "$TESTDATA/torch/state.bin" >"$TMP/t/optimizer.pt"
run torch-cut 1 "$S" --verify "$TMP/t"
expect_err torch-cut "^stinfo: $TMP/t/pytorch_model.bin: "
# Other pickles are not taken for weights: one file read, one problem.
expect_out torch-cut ': 1 problem \(folder; 1 file read, '

# --- PATH forms --------------------------------------------------------------
# One repository, one snapshot: the same checks, scoped.
run repo 0 "$S" --verify clean/models--t--shared
expect_out repo '^clean/models--t--shared: OK \(repository; 3 files read, '
c2=2222222222222222222222222222222222222222
run snap 0 "$S" --verify clean/models--t--shared/snapshots/$c2
expect_out snap '^clean/models--t--shared/snapshots/2+: OK \(snapshot; 2 files read, '
# A snapshot of the broken shard: found from the snapshot too.
run snap-trunc 1 "$S" --verify truncated/models--t--m/snapshots/$c1/
expect_err snap-trunc 'blobs/[0-9a-f]{64}: truncated: holds '
# A file with a sidecar beside it, and one without.
run file-sum 0 "$S" --verify sidecar/model.safetensors
expect_out file-sum '^sidecar/model.safetensors: OK \(file; 1 file read, [0-9]+ bytes hashed\)$'
run file-bad 1 "$S" --verify sidecar-bad/config.json
expect_err file-bad 'config.json: corrupt: sha256 of its [0-9]+ bytes is '
run file-nosum 0 "$S" --verify outside.safetensors
expect_out file-nosum 'OK \(file; 1 file read, 0 bytes hashed, 1 with no hash to compare against, no SHA256SUMS\)$'
run missing 2 "$S" --verify no-such-dir
expect_err missing '^stinfo: no-such-dir: No such file or directory$'
# Several PATHs: the worst exit code.
run several 2 "$S" --verify clean no-such-dir
run several1 1 "$S" --verify clean dangling

# --- JSON ----------------------------------------------------------------------
run json 1 "$S" --verify --json dangling
expect_out json '^\{"schema": 1, "path": "dangling", "layout": "cache", "ok": false, "files": 1, '
expect_out json '^  \{"kind": "dangling-link", "path": "dangling/models--t--m/snapshots/1+/model.safetensors", "message": "dangling/'
[ ! -s "$TMP/json.err" ] && ok || fail "json: stderr not empty"
run json-ok 0 "$S" --verify --json clean
expect_out json-ok '"ok": true, "files": 12, .*"repositories": 4, .*"problems": \[\]\}$'

# --- --hash ------------------------------------------------------------------
(cd sidecar && "$S" --hash .) >"$TMP/hash.out" 2>"$TMP/hash.err" && ok || fail "hash: exit"
diff -u "$G/hash-sidecar.out" "$TMP/hash.out" >&2 && ok || fail "hash: differs from hashlib's"
run hash-dir 0 "$S" --hash sidecar
diff -u "$G/hash-sidecar.out" "$TMP/hash-dir.out" >&2 && ok || fail "hash-dir: names not relative to PATH"
run hash-json 0 "$S" --hash --json sidecar/model.safetensors
diff -u "$G/hash-tensors.out" "$TMP/hash-json.out" >&2 && ok || fail "hash-json: tensor digests"
# The output is a sidecar: --verify then finds the folder clean.
mkdir -p "$TMP/side" && cp sidecar/*.* "$TMP/side/" && "$S" --hash "$TMP/side" >"$TMP/side/SHA256SUMS" \
  && "$S" --verify "$TMP/side" >/dev/null && ok || fail "hash output as SHA256SUMS"
# A snapshot's links into its cache's blobs/ are followed: an LFS file's
# SHA-256 is its blob's name.
run hash-snap 0 "$S" --hash clean/models--t--shared/snapshots/$c2
blob=$(readlink "clean/models--t--shared/snapshots/$c2/model.safetensors")
expect_out hash-snap "^${blob##*/}  model.safetensors\$"
expect_out hash-snap '^[0-9a-f]{64}  config.json$'
# Links leaving a folder are not followed when hashing either.
run hash-escape 1 "$S" --hash escaping/models--t--m/snapshots
expect_err hash-escape 'leads out of the folder; not followed'

# --- usage -------------------------------------------------------------------
run usage1 2 "$S" --verify --check clean
expect_err usage1 'go alone'
run usage2 2 "$S" --verify --hash clean
run usage3 2 "$S" --hash --stats clean
run help 0 "$S" --help
expect_out help '--verify'
expect_out help '--hash'

snapshot_tree >"$TMP/after"
diff "$TMP/before" "$TMP/after" >&2 && ok || fail "the trees changed while verified"
finish
