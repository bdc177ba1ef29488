# gpt2export killed by SIGKILL at random moments while it replaces an
# existing OUT (a snapshot folder, from random values or a GGUF file, or a
# .bin): OUT is then the old output byte for byte or the new one
# complete, never a mix, and holds no temporary; the next run into OUT
# succeeds and leaves no temporary anywhere. And the libst temporaries
# (".BASE.tmp-PID-XXXXXX") of a dead gpt2export are removed by the next
# run into the same OUT, those of a live one kept.
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2export
[ -x "$G" ] || { echo "no $G"; exit 77; }
export ST_TOKENIZER_DIR=$TESTDATA/gpt2-tokenizer ST_NO_PROGRESS=1
O=$TMP/out
mkdir -p "$O"

# tree_sum DIR: a digest of every name (hidden ones included) and every
# file's bytes under DIR.
tree_sum() {
  (cd "$1" && find . -print0 | sort -z | xargs -0 -r sha256sum 2>&1) | sha256sum
}
# temps DIR: the temporaries directly in DIR, one a line.
temps() { find "$1" -mindepth 1 -maxdepth 1 -name '.*.tmp-*'; }
no_temps() { # NAME DIR
  local left; left=$(temps "$2")
  if [ -z "$left" ]; then ok; else fail "$1: temporaries left: $left"; fi
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# A pid that no process has any more.
dead_pid() { local p; sh -c 'exit 0' & p=$!; wait $p; echo $p; }

# ---- the outputs: OLD, and NEW as a run that is not killed makes it --------------
# They differ in every file gpt2export writes (config.json too); README.md
# is the user's, kept by both.
OLD="--layers 1 --heads 2 --width 32 --vocab 1000 --context 16 --seed 1"
# About 30 MB of F32: long enough to be killed in the middle of it.
NEW="--layers 2 --heads 4 --width 128 --vocab 50257 --context 128 --seed 2"
run old 0 "$G" -f --random "$O/old" $OLD
echo mine >"$O/old/README.md"
old_sum=$(tree_sum "$O/old")
cp -a "$O/old" "$O/ref"
t0=$(now_ms)
run new 0 "$G" -f --random "$O/ref" $NEW
dur=$(($(now_ms) - t0))
new_sum=$(tree_sum "$O/ref")
[ "$old_sum" != "$new_sum" ] && ok || fail "old and new outputs are the same"
same_file() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; fi; }
same_file new-readme "$O/ref/README.md" "$O/old/README.md"

# ---- SIGKILL into an existing snapshot folder ------------------------------------
# sleep_ms MS
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
# snapshot_kills NAME TRIALS CMD...: CMD writes NEW into the existing
# snapshot $O/snap (a fresh copy of OLD each time), which takes about $dur
# ms; it is killed at random moments spread over a whole run and a half
# more, so that some land in the tensors, some in the small files and the
# commit, and some after the end. Then the same CMD runs to completion.
# kill_trial NAME TRIAL DELAY CMD...: one trial of snapshot_kills, killed
# after DELAY ms; counts into n_old, n_new, n_killed, n_beside.
kill_trial() {
  local name=$1 trial=$2 delay=$3 s
  shift 3
  rm -rf "$O/snap"; cp -a "$O/old" "$O/snap"
  "$@" >/dev/null 2>&1 &
  pid=$!
  sleep_ms "$delay"
  kill -KILL $pid 2>/dev/null
  { wait $pid; } 2>/dev/null
  [ $? = 137 ] && n_killed=$((n_killed + 1))
  [ -n "$(temps "$O")" ] && n_beside=$((n_beside + 1))
  s=$(tree_sum "$O/snap")
  if [ "$s" = "$old_sum" ]; then n_old=$((n_old + 1)); ok
  elif [ "$s" = "$new_sum" ]; then n_new=$((n_new + 1)); ok
  else
    fail "$name trial $trial (killed after $delay of $dur ms): OUT is neither the old snapshot nor the new one:"
    (cd "$O/snap" && ls -lA) | sed 's/^/  /' >&2
  fi
  # The next run removes what the killed one left, and completes.
  run "${name}_next_$trial" 0 "$@"
  no_temps "${name}_next_$trial" "$O"
  no_temps "${name}_next_$trial inside OUT" "$O/snap"
  if [ "$(tree_sum "$O/snap")" = "$new_sum" ]; then ok; else fail "${name}_next_$trial: not the new snapshot"; fi
}

# snapshot_kills NAME TRIALS CMD...: CMD writes NEW into the existing
# snapshot $O/snap (a fresh copy of OLD each time), which takes about $dur
# ms; it is killed at random moments spread over a whole run and a half
# more, so that some land in the tensors, some in the small files and the
# commit, and some after the end. Then the same CMD runs to completion.
# On a busy machine every kill may miss the writing; then more trials
# aim inside the run (a tenth to four fifths of it), up to 30, until one
# lands there.
snapshot_kills() {
  local name=$1 trials=$2 trial delay extra=0
  n_old=0 n_new=0 n_killed=0 n_beside=0
  shift 2
  for trial in $(seq 1 "$trials"); do
    delay=$(((RANDOM * 32768 + RANDOM) % (dur + dur / 2 + 1)))
    kill_trial "$name" "$trial" "$delay" "$@"
  done
  while [ $n_beside = 0 ] && [ $extra -lt 30 ]; do
    extra=$((extra + 1))
    delay=$((dur / 10 + (RANDOM * 32768 + RANDOM) % (dur * 7 / 10 + 1)))
    kill_trial "$name" "extra_$extra" "$delay" "$@"
  done
  echo "$name: $n_killed of $((trials + extra)) killed, $n_beside left a temporary beside OUT; OUT old $n_old, new $n_new"
  # Without a run killed half-way the trials proved nothing.
  [ $n_killed -gt 0 ] && [ $n_beside -gt 0 ] && ok ||
    fail "$name: no run was killed while writing ($n_killed killed, $n_beside left a temporary beside OUT)"
}
snapshot_kills kill 16 "$G" -f --random "$O/snap" $NEW

# The GGUF import writes its snapshot the same way: the same tensors and
# config, its tokenizer files rebuilt from the file.
run gguf 0 "$G" -f "$O/ref" "$O/ref.gguf"
cp -a "$O/old" "$O/ref_gguf"
t0=$(now_ms)
run gguf_new 0 "$G" -f "$O/ref.gguf" "$O/ref_gguf"
dur=$(($(now_ms) - t0))
new_sum=$(tree_sum "$O/ref_gguf")
snapshot_kills gguf_kill 6 "$G" -f "$O/ref.gguf" "$O/snap"

# ---- SIGKILL into an existing .bin ---------------------------------------------------
cp "$TESTDATA/llmc/tiny_fp32.bin" "$O/old.bin"
t0=$(now_ms)
run bin_new 0 "$G" -f "$O/ref" "$O/new.bin"
dur=$(($(now_ms) - t0))
n_killed=0
for trial in $(seq 1 6); do
  cp "$O/old.bin" "$O/x.bin"
  delay=$(((RANDOM * 32768 + RANDOM) % (dur + dur / 2 + 1)))
  "$G" -f "$O/ref" "$O/x.bin" >/dev/null 2>&1 &
  pid=$!
  sleep_ms $delay
  kill -KILL $pid 2>/dev/null
  { wait $pid; } 2>/dev/null
  [ $? = 137 ] && n_killed=$((n_killed + 1))
  if cmp -s "$O/x.bin" "$O/old.bin" || cmp -s "$O/x.bin" "$O/new.bin"; then ok
  else fail "bin kill trial $trial (after $delay of $dur ms): x.bin is neither the old file nor the new one"; fi
  run "bin_next_$trial" 0 "$G" -f "$O/ref" "$O/x.bin"
  no_temps "bin_next_$trial" "$O"
  same_file "bin_next_$trial" "$O/x.bin" "$O/new.bin"
done
echo ".bin kills: $n_killed killed"

# ---- the temporaries of a dead gpt2export ----------------------------------------------
dead=$(dead_pid)
for out in stale stale_new; do
  mkdir -p "$O/.$out.tmp-$dead-AbC123"
  echo partial >"$O/.$out.tmp-$dead-AbC123/.model.safetensors.tmp-$dead-dEf456"
done
# A live process's temporary is its own: kept.
mkdir -p "$O/.stale.tmp-$$-Live00"
echo partial >"$O/.x.bin.tmp-$dead-GhI789"
cp -a "$O/old" "$O/stale"
# Inside OUT: what an earlier gpt2export, which wrote an existing OUT file
# by file, left when it was killed.
for f in model.safetensors config.json vocab.json; do
  echo partial >"$O/stale/.$f.tmp-$dead-JkL012"
done
echo partial >"$O/stale/.model.safetensors.tmp-$$-Live01"
run stale 0 "$G" -f --random "$O/stale" $OLD
run stale_new 0 "$G" -f --random "$O/stale_new" $OLD
run stale_bin 0 "$G" -f "$O/old" "$O/x.bin"
for p in ".stale.tmp-$dead-AbC123" ".stale_new.tmp-$dead-AbC123" ".x.bin.tmp-$dead-GhI789"; do
  if [ -e "$O/$p" ]; then fail "stale: $p of dead pid $dead not removed"; else ok; fi
done
for f in model.safetensors config.json vocab.json; do
  if [ -e "$O/stale/.$f.tmp-$dead-JkL012" ]; then fail "stale: .$f.tmp-$dead-JkL012 inside OUT not removed"; else ok; fi
done
if [ -d "$O/.stale.tmp-$$-Live00" ] && [ -f "$O/stale/.model.safetensors.tmp-$$-Live01" ]; then ok
else fail "stale: a live process's temporary was removed"; fi
rmdir "$O/.stale.tmp-$$-Live00"; rm "$O/stale/.model.safetensors.tmp-$$-Live01"
no_temps stale "$O"
if [ "$(tree_sum "$O/stale")" = "$old_sum" ]; then ok; else fail "stale: OUT is not the snapshot written"; fi

finish
