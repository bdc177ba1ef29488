# stinfo --verify on hostile trees (doc/safety.md, "OK means something was
# checked"): empty weight files, folders it cannot read, a sparse blob
# that its listing says is small, names sha256sum escapes, empty and
# partial SHA256SUMS. Every tree is made here, by hand.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TMP" || exit 1
E=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 # sha256 of nothing
C1=1111111111111111111111111111111111111111
W=$TESTDATA/verify/cases/sidecar/model.safetensors
sum() { sha256sum "$1" | cut -c1-64; }

# --- a 0-byte .safetensors is invalid, as --check says -----------------------
mkdir empty && : >empty/model.safetensors && echo "$E  model.safetensors" >empty/SHA256SUMS
run check-empty 1 "$S" --check empty/model.safetensors
run empty 1 "$S" --verify empty
expect_err empty '^stinfo: empty/model.safetensors: file is 0 bytes, too short .*\(empty file\)$'
expect_out empty '^empty: 1 problem \(folder; 1 file read, 0 bytes hashed\)$'
# In a cache: the blob of nothing, linked as the weights.
mkdir -p hub/models--t--e/blobs hub/models--t--e/snapshots/$C1 hub/models--t--e/refs
: >hub/models--t--e/blobs/$E
ln -s ../../blobs/$E hub/models--t--e/snapshots/$C1/model.safetensors
printf %s $C1 >hub/models--t--e/refs/main
run empty-cache 1 "$S" --verify hub
expect_err empty-cache "snapshots/$C1/model.safetensors: file is 0 bytes, too short"
# As one shard of two.
mkdir shards && cp "$W" shards/model-00001-of-00002.safetensors && : >shards/model-00002-of-00002.safetensors
printf '{"weight_map": {"wte": "model-00001-of-00002.safetensors", "x": "model-00002-of-00002.safetensors"}}\n' \
  >shards/model.safetensors.index.json
(cd shards && sha256sum -- * >SHA256SUMS)
run empty-shard 1 "$S" --verify shards
expect_err empty-shard '^stinfo: shards/model-00002-of-00002.safetensors: file is 0 bytes'

# --- sizes before hashes: a sparse 1 TiB blob listed as 112 bytes ------------
R=sparse/models--t--s
mkdir -p $R/blobs $R/snapshots/$C1 $R/trees $R/refs
B=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
if truncate -s 1T $R/blobs/$B 2>/dev/null; then
  ln -s ../../blobs/$B $R/snapshots/$C1/model.safetensors
  printf %s $C1 >$R/refs/main
  printf '{"format_version": 1, "files": {"model.safetensors": {"size": 112, "blob_id": "%s", "lfs_sha256": "%s", "lfs_size": 112}}}' \
    bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb $B >$R/trees/$C1.json
  # Hashing it would take most of an hour: 60 s is a generous bound.
  run sparse 1 timeout 60 "$S" --verify sparse
  expect_err sparse "blobs/$B: holds 1099511627776 bytes, trees/$C1.json says 112; not hashed"
  expect_out sparse ', 0 bytes hashed, 1 repository\)$'
  rm -f $R/blobs/$B
else
  echo "no sparse files here: the 1 TiB case is skipped"
fi

# --- a dead writer's leftovers: warned of as --check does, fail nothing ------
gone=$(sh -c 'echo $$')
mkdir left && cp "$W" left/model.safetensors && (cd left && sha256sum model.safetensors >SHA256SUMS)
printf 'half' >"left/.model.safetensors.tmp-$gone-AbC123"
mkdir "left/.sub.tmp-$gone-XyZ789" && printf 'x' >"left/.sub.tmp-$gone-XyZ789/config.json"
run left-check 0 "$S" --check left
run left 0 "$S" --verify left
expect_err left "^stinfo: warning: left/\.model\.safetensors\.tmp-$gone-AbC123: left by a writer that is gone; not part of the snapshot$"
expect_err left "^stinfo: warning: left/\.sub\.tmp-$gone-XyZ789: left by a writer that is gone; not part of the snapshot$"
# The same line as --check's, word for word.
grep -F "tmp-$gone-AbC123" "$TMP/left-check.err" >"$TMP/left-check.line"
grep -F "tmp-$gone-AbC123" "$TMP/left.err" >"$TMP/left.line"
[ -s "$TMP/left.line" ] && cmp -s "$TMP/left-check.line" "$TMP/left.line" && ok ||
  fail "left: --verify's warning is not --check's: $(cat "$TMP/left.line") / $(cat "$TMP/left-check.line")"
expect_out left '^left: OK \(folder; 1 file read, [0-9]+ bytes hashed, 2 warnings\)$'
expect_not_err left 'not listed in SHA256SUMS|config\.json'
run left-json 0 "$S" --verify --json left
expect_out left-json '"ok": true, "files": 1, .*"leftovers": 2, .*"problems": \['
expect_out left-json "^  \{\"kind\": \"leftover\", \"path\": \"left/\.model\.safetensors\.tmp-$gone-AbC123\", "
# Another problem still fails: the leftovers are counted beside it.
printf 'junk\n' >left/notes.txt
run left-bad 1 "$S" --verify --json left
expect_out left-bad '"ok": false, .*"leftovers": 2, '
# A live writer's temporary is an ordinary file (here: not in SHA256SUMS).
rm left/notes.txt && printf 'busy' >"left/.model.safetensors.tmp-$$-LiVe01"
run left-live 1 "$S" --verify left
expect_err left-live "^stinfo: left/\.model\.safetensors\.tmp-$$-LiVe01: not listed in SHA256SUMS"
rm "left/.model.safetensors.tmp-$$-LiVe01"
# In a cache: a temporary in a snapshot, and a snapshot writer's folder.
L=hubleft/models--t--l
mkdir -p $L/blobs $L/snapshots/$C1 $L/refs
cp "$W" $L/blobs/$(sum "$W") && ln -s ../../blobs/$(sum "$W") $L/snapshots/$C1/model.safetensors
printf %s $C1 >$L/refs/main
printf 'half' >"$L/snapshots/$C1/.model.safetensors.tmp-$gone-AbC123"
mkdir "$L/snapshots/.$C1.tmp-$gone-XyZ789"
run left-cache 0 "$S" --verify hubleft
expect_err left-cache "^stinfo: warning: $L/snapshots/$C1/\.model\.safetensors\.tmp-$gone-AbC123: left by a writer"
expect_err left-cache "^stinfo: warning: $L/snapshots/\.$C1\.tmp-$gone-XyZ789: left by a writer"
expect_not_err left-cache 'regular file where the cache links|not a snapshot folder'
expect_out left-cache '^hubleft: OK \(cache; 1 file read, .*, 2 warnings\)$'

# --- sha256sum's escaped names: --hash output --verify reads back ------------
mkdir esc && printf 'a\n' >'esc/back\slash' && printf 'b\n' >"esc/new
line" && printf 'c\n' >esc/plain
"$S" --hash esc >"$TMP/esc.sums" && cp "$TMP/esc.sums" esc/SHA256SUMS && ok || fail "esc: --hash"
grep -q '^\\[0-9a-f]\{64\}  back\\\\slash$' esc/SHA256SUMS && ok || fail "esc: back\\slash not escaped"
run esc 0 "$S" --verify esc
expect_out esc '^esc: OK \(folder; 3 files read, 6 bytes hashed\)$'
# A listed file that is missing: JSON names it, not its escaped form.
printf '\\%s  gone\\nfile\n' "$E" >>esc/SHA256SUMS
run esc-json 1 "$S" --verify --json esc
expect_out esc-json '"kind": "missing-file", "path": "esc/gone\\nfile"'
# A bad escape is a malformed line, and a malformed line a problem.
printf '\\%s  bad\\qescape\n' "$E" >esc/SHA256SUMS
run esc-bad 1 "$S" --verify esc
expect_err esc-bad "^stinfo: esc/SHA256SUMS: line 1 is not '<sha256>  <file>'; ignored$"

# --- empty and partial SHA256SUMS --------------------------------------------
mkdir sums0 && cp "$W" sums0/ && : >sums0/SHA256SUMS
run sums-empty 1 "$S" --verify sums0
expect_err sums-empty '^stinfo: sums0/SHA256SUMS: lists no file; nothing is verified against it$'
expect_err sums-empty '^stinfo: sums0/model.safetensors: not listed in SHA256SUMS; its bytes are not verified$'
mkdir sums1 && cp "$W" sums1/ && echo '{}' >sums1/config.json && (cd sums1 && sha256sum model.safetensors >SHA256SUMS)
run sums-partial 1 "$S" --verify sums1
expect_err sums-partial '^stinfo: sums1/config.json: not listed in SHA256SUMS; its bytes are not verified$'
expect_out sums-partial '^sums1: 1 problem '

# --- a verification that read nothing -----------------------------------------
mkdir void
run void 1 "$S" --verify void
expect_err void '^stinfo: void: nothing verified: no file was read$'
run void-json 1 "$S" --verify --json void
expect_out void-json '"ok": false, "files": 0,'

# --- folders it cannot read: as an unprivileged user (root reads anything) --
as_user() {
  if [ "$(id -u)" != 0 ]; then "$@"
  elif command -v setpriv >/dev/null; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else su nobody -s /bin/sh -c '"$0" "$@"' "$@"; fi
}
mkdir -p deny && chmod 755 "$TMP" deny
for c in repo blobs trees; do
  d=deny/$c/models--t--m
  mkdir -p $d/blobs $d/snapshots/$C1 $d/trees $d/refs
  cp "$W" $d/blobs/$(sum "$W")
  ln -s ../../blobs/$(sum "$W") $d/snapshots/$C1/model.safetensors
  printf %s $C1 >$d/refs/main
  printf '{"format_version": 1, "files": {}}' >$d/trees/$C1.json
  chmod -R a+rX deny/$c
done
chmod 000 deny/repo/models--t--m deny/blobs/models--t--m/blobs deny/trees/models--t--m/trees
if as_user test -x "$S" && ! as_user ls deny/repo/models--t--m >/dev/null 2>&1; then
  run deny-repo 1 as_user "$S" --verify --json deny/repo
  expect_out deny-repo '"ok": false, "files": 0,'
  expect_out deny-repo '"kind": "unreadable", "path": "deny/repo/models--t--m", "message": "deny/repo/models--t--m: cannot list the folder: Permission denied; nothing in it is verified"'
  run deny-blobs 1 as_user "$S" --verify deny/blobs
  expect_err deny-blobs '^stinfo: deny/blobs/models--t--m/blobs: cannot list the folder: Permission denied; nothing in it is verified$'
  expect_out deny-blobs '^deny/blobs: [0-9]+ problems? '
  run deny-trees 1 as_user "$S" --verify deny/trees
  expect_err deny-trees "^stinfo: deny/trees/models--t--m/trees/$C1.json: cannot read the listing: Permission denied; "
else
  echo "cannot run as another user here: the unreadable-folder cases are skipped"
fi
chmod -R u+rwX deny
finish
