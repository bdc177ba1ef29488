# stconvert --force replacing an existing OUT: nothing outside OUT is
# touched (doc/safety.md). A mount point inside OUT is refused before
# anything is written, and stays whole; what is carried over keeps its
# owner and permission bits whatever the umask.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"

# ---- a mount point inside OUT (needs root and mount(2): skipped elsewhere) -----
mkdir -p "$TMP/out/mnt"
"$SC" -q "$D/snap" "$TMP/out-src" && cp -a "$TMP/out-src/." "$TMP/out/"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m libst-test "$TMP/out/mnt" 2>/dev/null; then
  trap 'umount "$TMP/out/mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
  echo precious > "$TMP/out/mnt/file"
  before=$(tree_sum "$TMP/out")
  run mount 2 "$SC" -f --to bf16 "$D/snap" "$TMP/out"
  expect_err mount "^stconvert: .*/out/mnt: a mount point \(another file system\); a directory holding one is not replaced"
  if [ "$(cat "$TMP/out/mnt/file" 2>/dev/null)" = precious ]; then ok; else fail "mount: the mounted file system lost its file"; fi
  if [ "$(tree_sum "$TMP/out")" = "$before" ]; then ok; else fail "mount: OUT changed"; fi
  if mountpoint -q "$TMP/out/mnt"; then ok; else fail "mount: no longer mounted at OUT/mnt"; fi
  n=$(ls -A "$TMP" | grep -c '\.tmp-' || true)
  if [ "$n" = 0 ]; then ok; else fail "mount: $n temporaries left"; fi
  umount "$TMP/out/mnt"
else
  echo "skipped: a mount point inside OUT (needs root and mount)"
fi

# ---- owners and modes of what is carried over ---------------------------------
rm -rf "$TMP/keep"; mkdir -p "$TMP/keep/mine/deeper"
cp -a "$TMP/out-src/." "$TMP/keep/"
echo notes > "$TMP/keep/mine/notes.txt"
chmod 0775 "$TMP/keep/mine"; chmod 2751 "$TMP/keep/mine/deeper"
if [ "$(id -u)" = 0 ]; then chown -R 1234:5678 "$TMP/keep/mine"; fi
want=$(stat -c '%a %u %g' "$TMP/keep/mine" "$TMP/keep/mine/deeper" "$TMP/keep/mine/notes.txt")
run keep 0 bash -c "umask 077 && exec \"\$0\" -f --to bf16 \"\$1\" \"\$2\"" "$SC" "$D/snap" "$TMP/keep"
got=$(stat -c '%a %u %g' "$TMP/keep/mine" "$TMP/keep/mine/deeper" "$TMP/keep/mine/notes.txt")
if [ "$got" = "$want" ]; then ok; else fail "keep: owners and modes '$got', expected '$want'"; fi
expect_same keep_notes <(echo notes) "$TMP/keep/mine/notes.txt"

# ---- a dangling link as OUT is not replaced without --force ------------------------
ln -s nowhere "$TMP/dangling.safetensors"
run dangling 2 "$SC" "$D/snap/model.safetensors" "$TMP/dangling.safetensors"
expect_err dangling 'dangling.safetensors: already exists, a link to nothing \(use --force to replace it\)'
if [ -L "$TMP/dangling.safetensors" ]; then ok; else fail "dangling: the link was replaced"; fi
run dangling_force 0 "$SC" -f "$D/snap/model.safetensors" "$TMP/dangling.safetensors"
expect_same dangling_force "$D/snap/model.safetensors" "$TMP/dangling.safetensors"

finish
