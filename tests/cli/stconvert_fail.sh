# stconvert failure paths: whatever goes wrong (a bad shard, a full disk, a
# signal, an unreadable snapshot file), OUT is the old one or absent, never
# partial, no temporary file is left, and the exit status says so.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"

# An existing OUT of each kind, to show it is left untouched.
make_outs() {
  rm -rf "$TMP/outdir"
  mkdir "$TMP/outdir"; cp -r "$D/snap/." "$TMP/outdir/"; echo mine >"$TMP/outdir/user.txt"
  cp "$D/mixed.canonical.safetensors" "$TMP/outfile.safetensors"
}
make_outs
dir_sum=$(tree_sum "$TMP/outdir")
untouched() { # NAME
  if [ "$(tree_sum "$TMP/outdir")" = "$dir_sum" ]; then ok; else fail "$1: OUT directory changed"; fi
  expect_same "$1 file" "$D/mixed.canonical.safetensors" "$TMP/outfile.safetensors"
  no_temps "$1" "$TMP"
}

# ---- a broken shard in a sharded input -----------------------------------------
cp -r "$D/snap-sharded" "$TMP/bad"
truncate -s -8 "$TMP/bad/model-00002-of-00002.safetensors"
run bad_shard 2 "$SC" --force --to bf16 "$TMP/bad" "$TMP/outdir"
expect_err bad_shard '^stconvert: .*model-00002-of-00002.safetensors'
run bad_shard_file 2 "$SC" --force --to bf16 "$TMP/bad" "$TMP/outfile.safetensors"
untouched bad_shard
rm "$TMP/bad/model-00002-of-00002.safetensors"
run missing_shard 2 "$SC" --to bf16 "$TMP/bad" "$TMP/new"
expect_err missing_shard 'model-00002-of-00002.safetensors'
expect_absent missing_shard "$TMP/new"

# ---- a snapshot file that cannot be copied, found after the tensors -----------
cp -r "$D/snap" "$TMP/dangling"; ln -s nowhere "$TMP/dangling/tokenizer.json"
run dangling 2 "$SC" --force --to bf16 "$TMP/dangling" "$TMP/outdir"
expect_err dangling 'dangling/tokenizer.json: cannot copy: No such file or directory'
run dangling_new 2 "$SC" --to bf16 "$TMP/dangling" "$TMP/new"
expect_absent dangling_new "$TMP/new"
untouched dangling

# ---- disk full (a file size limit): EFBIG, not death by SIGXFSZ -----------------
make_f32 "$TMP/big.safetensors" 262144     # 1 MiB of F32: 512 KiB of BF16
run efbig 2 bash -c "ulimit -f 256; exec '$SC' --to bf16 '$TMP/big.safetensors' '$TMP/new.safetensors'"
expect_err efbig 'new.safetensors.*File too large'
expect_absent efbig "$TMP/new.safetensors"
run efbig_force 2 bash -c "ulimit -f 256; exec '$SC' --force --to bf16 '$TMP/big.safetensors' '$TMP/outfile.safetensors'"
# Directory output: the first shard fits, the second does not. Input: three
# shards a (160 kB), b (160 kB), c (1 MiB), split at 200 kB into [a], [c], [b].
mkdir "$TMP/abc"
make_f32 "$TMP/abc/a.safetensors" 40000 a
make_f32 "$TMP/abc/b.safetensors" 40000 b
make_f32 "$TMP/abc/c.safetensors" 262144 c
printf '{"metadata":{"total_size":%d},"weight_map":{"a":"a.safetensors","b":"b.safetensors","c":"c.safetensors"}}' \
  $((4 * (40000 + 40000 + 262144))) >"$TMP/abc/model.safetensors.index.json"
run efbig_dir 2 bash -c "ulimit -f 256; exec '$SC' -v --force --shard-size 200kB '$TMP/abc' '$TMP/outdir'"
expect_err efbig_dir 'model-00002-of-00003.safetensors.*File too large'
run efbig_dir_new 2 bash -c "ulimit -f 256; exec '$SC' -q '$TMP/big.safetensors' '$TMP/new'"
expect_absent efbig_dir_new "$TMP/new"
untouched efbig

# ---- a signal in the middle of a conversion ------------------------------------
# A 64 MiB F32 input (32 MiB of BF16 out). stconvert is stopped (SIGSTOP) as
# soon as the writer's temporary file exists and holds less than 8 MiB, so
# it is surely mid-conversion, not syncing or renaming a complete output;
# then the test acts (a signal, a truncated input) and lets it continue.
# A run caught too late is retried.
make_f32 "$TMP/huge.safetensors" 16777216
# start_stopped PATTERN CMD...: run CMD in the background, leave it stopped
# mid-conversion in $pid; returns 1 when it could not be caught.
start_stopped() {
  local pat=$1 f end=$((SECONDS + 60)); shift
  "$@" >"$TMP/bg.out" 2>"$TMP/bg.err" &
  pid=$!
  while [ $SECONDS -lt $end ]; do
    kill -STOP $pid 2>/dev/null || break
    for f in $pat; do
      if [ -f "$f" ]; then
        [ "$(stat -c %s "$f")" -lt 8388608 ] && return 0
        break 2
      fi
    done
    kill -CONT $pid
  done
  # Not caught: let it finish before anything is put back.
  kill -CONT $pid 2>/dev/null
  { wait $pid; } 2>/dev/null
  return 1
}
signal_test() { # NAME SIGNAL OUT PATTERN [OPTIONS...]
  local name=$1 sig=$2 out=$3 pat=$4 try rc; shift 4
  for try in 1 2 3 4 5; do
    if start_stopped "$pat" "$SC" "$@" --to bf16 "$TMP/huge.safetensors" "$out"; then
      kill -"$sig" $pid; kill -CONT $pid
      { wait $pid; } 2>/dev/null
      rc=$?
      cp "$TMP/bg.err" "$TMP/$name.err"
      if [ $rc -gt 128 ]; then ok; else fail "$name: exit $rc, expected death by SIG$sig"; fi
      return
    fi
    # Caught too late: the run completed; put everything back and retry.
    rm -rf "$TMP/new" "$TMP/new.safetensors"; make_outs
  done
  fail "$name: could not stop stconvert mid-conversion"
}
signal_test sig_term TERM "$TMP/new.safetensors" "$TMP/.new.safetensors.tmp-*"
expect_absent sig_term "$TMP/new.safetensors"
signal_test sig_hup HUP "$TMP/new" "$TMP/.new.tmp-*/.model.safetensors.tmp-*"
expect_absent sig_hup "$TMP/new"
signal_test sig_int INT "$TMP/outdir" "$TMP/.outdir.tmp-*/.model.safetensors.tmp-*" --force
signal_test sig_force TERM "$TMP/outfile.safetensors" "$TMP/.outfile.safetensors.tmp-*" --force
untouched signals

# ---- the input shrinks while it is being read (found halfway) --------------------
shrunk=0
for try in 1 2 3 4 5; do
  cp "$TMP/huge.safetensors" "$TMP/shrink.safetensors"
  if start_stopped "$TMP/.outfile.safetensors.tmp-*" \
      "$SC" --force --to bf16 "$TMP/shrink.safetensors" "$TMP/outfile.safetensors"; then
    truncate -s 1000000 "$TMP/shrink.safetensors"
    kill -CONT $pid
    { wait $pid; } 2>/dev/null
    rc=$?
    cp "$TMP/bg.err" "$TMP/shrink.err"
    if [ $rc = 2 ]; then ok; else fail "shrink: exit $rc, expected 2"; fi
    shrunk=1
    break
  fi
  make_outs
done
[ $shrunk = 1 ] || fail "shrink: could not stop stconvert mid-conversion"
expect_err shrink 'shrink.safetensors: tensor .w.: the file shrank while reading'
untouched shrink

# ---- OUT cannot be made ----------------------------------------------------------
run no_parent 2 "$SC" "$D/mixed.safetensors" "$TMP/no/such/dir"
expect_err no_parent 'cannot create a temporary directory beside it'
run no_parent_file 2 "$SC" "$D/mixed.safetensors" "$TMP/no/such.safetensors"
expect_err no_parent_file 'no/such.safetensors'
run out_special 2 "$SC" --force "$D/mixed.safetensors" /dev/null
expect_err out_special '/dev/null: exists and is not a regular file or directory'
no_temps out "$TMP"

# ---- kill -9: the next run into the same OUT removes what it left -----------------
# SIGKILL cannot be caught, so the killed run leaves its temporary directory
# (.kill9.tmp-PID-XXXXXX); PID is gone, so the next run removes it.
killed=0
for try in 1 2 3 4 5; do
  if start_stopped "$TMP/.kill9.tmp-*/.model.safetensors.tmp-*" \
      "$SC" --to bf16 "$TMP/huge.safetensors" "$TMP/kill9"; then
    kill -KILL $pid
    { wait $pid; } 2>/dev/null
    left=$(find "$TMP" -maxdepth 1 -name '.kill9.tmp-*' | wc -l)
    if [ "$left" = 1 ]; then ok; else fail "kill9: $left temporaries after kill -9, expected 1"; fi
    killed=1
    break
  fi
  rm -rf "$TMP/kill9"
done
[ $killed = 1 ] || fail "kill9: could not stop stconvert mid-conversion"
run kill9_next 0 "$SC" -q --to bf16 "$D/mixed.safetensors" "$TMP/kill9"
no_temps kill9 "$TMP"
if [ -f "$TMP/kill9/model.safetensors" ]; then ok; else fail "kill9: the next run wrote nothing"; fi

finish
