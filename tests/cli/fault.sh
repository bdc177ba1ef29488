# Fault injection at every write, as SQLite tests its commit: each writer
# runs once clean under the shim tests/fault/fault.c (LD_PRELOAD), which
# counts the calls that write under the work directory (open with
# O_CREAT, mkdir, write, fsync, rename, link, symlink, ...: see fault.c);
# then, for each N, a run into an existing OUT has its Nth call fail
# (EIO once, or ENOSPC from the Nth call on, as a full disk). Each such
# run must exit 2 with exactly one line on stderr, leave the old OUT byte
# for byte as it was (a digest of every name, mode and byte of the tree),
# and the next run without a fault must succeed, give the new OUT, and
# leave no temporary anywhere. Two outcomes are counted apart: a failure
# after the commit's last rename (the fsync of the parent directory that
# makes the rename durable) exits 2 with the new OUT already in place, as
# st/atomic.h and st/snapshot.h say; and a failed link(2) of a file kept
# from the old OUT is followed by a copy, so the run succeeds (exit 0,
# nothing on stderr, the new OUT).
#
# Readers (stinfo --check, stdiff, stinfo --verify, on files small enough
# to be read with read/pread rather than mapped): EIO on the Nth read must
# give exit 2, never an answer (0 or 1); a short count on the Nth read
# must give the clean run's answer, byte for byte.
#
# By default every Kth N is tried, plus the first and the last four
# (about 16 per writer), EIO and ENOSPC alternately; FAULT_FULL=1 tries
# every N with each:
#   FAULT_FULL=1 ctest --test-dir build -R cli_fault --output-on-failure
# A sanitizer build (ST_SANITIZE) has no shim: the test is skipped.
. "$(dirname "$0")/lib.bash"
if [ -z "${FAULT_SO:-}" ] || [ ! -f "$FAULT_SO" ]; then
  echo "skipped: no fault shim (FAULT_SO unset: a sanitizer build, whose interceptors do not mix with LD_PRELOAD)"
  exit 77
fi
SC=$BIN/stconvert G=$BIN/gpt2export SI=$BIN/stinfo SD=$BIN/stdiff
for t in "$SC" "$G" "$SI" "$SD"; do [ -x "$t" ] || { echo "no $t"; exit 77; }; done
export ST_NO_PROGRESS=1 ST_TOKENIZER_DIR=$TESTDATA/gpt2-tokenizer
FULL=${FAULT_FULL:-0}
W=$TMP/w # FAULT_PREFIX: only calls under it count
mkdir -p "$W"

# tree_sum PATH: a digest of every name (hidden ones too), type, mode, link
# target and file's bytes under PATH (a file or a directory).
tree_sum() {
  if [ -d "$1" ] && [ ! -L "$1" ]; then
    (cd "$1" && find . -printf '%y %m %p %l\n' | LC_ALL=C sort &&
     find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum
  else
    { stat -c '%F %a' "$1"; sha256sum <"$1"; } 2>&1 | sha256sum
  fi
}
# temps: the temporaries of libst and of the tools anywhere under $W.
temps() { find "$W" \( -name '.*.tmp-*' -o -name '.*.stconvert-*' \) 2>/dev/null; }
# shim ARGS...: run ARGS under the shim with the FAULT_* variables given
# before it (env), counting under $W.
shim() { env LD_PRELOAD="$FAULT_SO" FAULT_PREFIX="$W" "$@"; }
# picks TOTAL: the Ns to try, one a line.
picks() {
  local total=$1 k n
  if [ "$FULL" = 1 ] || [ "$total" -le 16 ]; then seq 1 "$total"; return; fi
  k=$(( (total + 11) / 12 ))
  { seq 1 "$k" "$total"; seq $((total - 3)) "$total"; } | sort -nu
}

tried=0 exits2=0 clean_exits=0 unchanged=0 after_commit=0 recovered=0
# sweep NAME OUT SETUP NEW...: SETUP (a shell command) makes the old OUT;
# NEW is the writer's command line that replaces it.
sweep() {
  local name=$1 out=$2 setup=$3; shift 3
  local base=$W/base-$name old new total n rc lines e persist s
  rm -rf "$out" "$base"
  if ! eval "$setup" >"$TMP/$name.setup" 2>&1; then
    fail "$name: setup: $setup"; sed 's/^/  /' "$TMP/$name.setup" >&2; return
  fi
  mv "$out" "$base"
  old=$(tree_sum "$base")
  # The clean run: the count, and the new OUT.
  cp -a "$base" "$out"
  rm -f "$TMP/$name.log"
  shim FAULT_COUNT_FILE="$TMP/$name.count" FAULT_LOG="$TMP/$name.log" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err"
  rc=$?
  if [ $rc != 0 ]; then
    fail "$name: the clean run exits $rc"; sed 's/^/  /' "$TMP/$name.err" >&2; return
  fi
  new=$(tree_sum "$out")
  [ "$new" != "$old" ] && ok || fail "$name: the old and the new OUT are the same"
  total=$(awk '$1 == "writes" { print $2 }' "$TMP/$name.count")
  if [ -z "$total" ] || [ "$total" -lt 3 ]; then
    fail "$name: the shim counted ${total:-no} write calls"; return
  fi
  # Calls after the last rename come after the commit.
  local last_rename call
  last_rename=$(awk '$1 == "w" && $3 ~ /^rename/ { n = $2 } END { print n + 0 }' "$TMP/$name.log")
  local t0=$tried c0=$clean_exits u0=$unchanged a0=$after_commit r0=$recovered
  local trials
  # EIO on the Nth call alone, or ENOSPC from the Nth on: alternately, or
  # both for every N in the full sweep.
  if [ "$FULL" = 1 ]; then
    trials=$(for n in $(seq 1 "$total"); do echo "$n:EIO" "$n:ENOSPC"; done)
  else
    trials=$(for n in $(picks "$total"); do
               if [ $((n % 2)) = 1 ]; then echo "$n:EIO"; else echo "$n:ENOSPC"; fi
             done)
  fi
  local trial
  for trial in $trials; do
    n=${trial%%:*} e=${trial#*:}
    if [ "$e" = EIO ]; then persist=0; else persist=1; fi
    rm -rf "$out"; cp -a "$base" "$out"
    shim FAULT_AT=$n FAULT_ERRNO=$e FAULT_PERSIST=$persist "$@" \
      >"$TMP/$name.$n.out" 2>"$TMP/$name.$n.err"
    rc=$?
    tried=$((tried + 1))
    lines=$(wc -l <"$TMP/$name.$n.err")
    s=$(tree_sum "$out")
    call=$(awk -v n="$n" '$1 == "w" && $2 == n { print $3 }' "$TMP/$name.log")
    if [ $rc = 2 ]; then exits2=$((exits2 + 1)); fi
    if [ $rc = 0 ]; then clean_exits=$((clean_exits + 1)); fi
    if [ $rc = 2 ] && [ "$lines" = 1 ] && [ "$s" = "$old" ]; then
      unchanged=$((unchanged + 1)); ok
    elif [ $rc = 2 ] && [ "$lines" = 1 ] && [ "$s" = "$new" ] && [ "$n" -gt "$last_rename" ]; then
      after_commit=$((after_commit + 1)); ok
    elif [ $rc = 0 ] && [ "$call" = link ] && [ "$lines" = 0 ] && [ "$s" = "$new" ]; then
      # A file kept from the old OUT is linked, or else copied.
      recovered=$((recovered + 1)); ok
    else
      local what=changed
      [ "$s" = "$old" ] && what="unchanged"
      [ "$s" = "$new" ] && what="the new one"
      fail "$name: call $n of $total ($call) failed with $e: exit $rc, $lines lines on stderr, OUT $what"
      sed 's/^/  stderr: /' "$TMP/$name.$n.err" | head -3 >&2
    fi
    if [ $rc = 2 ]; then
      grep -q "$(printf '%s' "$e" | sed 's/EIO/Input\/output error/; s/ENOSPC/No space left on device/')" \
        "$TMP/$name.$n.err" && ok ||
        fail "$name: call $n ($call, $e): the error does not say why: $(head -1 "$TMP/$name.$n.err")"
    fi
    # The failed run removed its own temporaries.
    local left; left=$(temps)
    [ -z "$left" ] && ok || fail "$name: call $n ($call, $e) failed, and its temporaries are left: $left"
    # The next run, with no fault: the new OUT, and no temporary anywhere.
    "$@" >"$TMP/$name.next.out" 2>"$TMP/$name.next.err"
    rc=$?
    [ $rc = 0 ] && ok || { fail "$name: after call $n failed, the next run exits $rc"
                           sed 's/^/  /' "$TMP/$name.next.err" | head -3 >&2; }
    [ "$(tree_sum "$out")" = "$new" ] && ok || fail "$name: after call $n failed, the next run does not give the new OUT"
    left=$(temps)
    [ -z "$left" ] && ok || fail "$name: after call $n failed and a run succeeded, temporaries are left: $left"
  done
  echo "$name: $total write calls; $((tried - t0)) tried, $((clean_exits - c0)) clean exits, $((unchanged - u0)) old OUT unchanged, $((after_commit - a0)) new OUT after the commit, $((recovered - r0)) links copied instead"
  rm -rf "$out" "$base"
}

D=$TESTDATA/stconvert Q=$TESTDATA/quant L=$TESTDATA/llmc J=$TESTDATA/gguf/judge

# ---- stconvert -----------------------------------------------------------------
sweep sc_file "$W/out.safetensors" "'$SC' -q --to f16 '$D/mixed.safetensors' '$W/out.safetensors'" \
  "$SC" -q -f --to bf16 "$D/mixed.safetensors" "$W/out.safetensors"
sweep sc_snap "$W/out" "'$SC' -q --to f16 '$D/snap' '$W/out'" \
  "$SC" -q -f --to bf16 "$D/snap" "$W/out"
# Sharded, with the index (st_index_write).
sweep sc_shards "$W/out" "'$SC' -q --to f16 --shard-size 100B '$D/snap' '$W/out'" \
  "$SC" -q -f --to bf16 --shard-size 100B "$D/snap" "$W/out"
# FP8: quantize, and dequantize.
sweep sc_fp8_quantize "$W/out" "'$SC' -q --to bf16 '$Q/snap-q' '$W/out'" \
  "$SC" -q -f --to f8_e4m3 --block 2,2 "$Q/snap-q" "$W/out"
sweep sc_fp8_dequantize "$W/out" "'$SC' -q --to f32 '$Q/snap-fp8' '$W/out'" \
  "$SC" -q -f --to bf16 "$Q/snap-fp8" "$W/out"

# ---- gpt2export ------------------------------------------------------------------
sweep g_snapshot "$W/out" "'$G' -q '$L/tiny_bf16.bin' '$W/out'" \
  "$G" -q -f "$L/tiny_fp32.bin" "$W/out"
sweep g_gguf "$W/out.gguf" "'$G' -q '$J/model' '$W/out.gguf' --type f32" \
  "$G" -q -f "$J/model" "$W/out.gguf" --type q8_0
sweep g_gguf_import "$W/out" "'$G' -q '$L/tiny_fp32.bin' '$W/out'" \
  "$G" -q -f "$J/expected-f16.gguf" "$W/out"
sweep g_llmc "$W/out.bin" "'$G' -q '$L/tiny_bf16_hf' '$W/out.bin'" \
  "$G" -q -f "$L/tiny_fp32_hf" "$W/out.bin"

echo "writers: $tried calls tried, $exits2 exits 2, $clean_exits clean exits, $unchanged old OUT unchanged, $after_commit new OUT after the commit, $recovered links copied instead"

# ---- readers ---------------------------------------------------------------------
R=$W/r
mkdir -p "$R"
cp -a "$D/mixed.safetensors" "$D/mixed.bf16.safetensors" "$D/snap" "$R/"
cp -a "$TESTDATA/verify/cases/clean" "$TESTDATA/verify/cases/sidecar" "$R/"
r_tried=0 r_exits2=0 r_answers=0 r_short=0
# rsweep NAME CMD...: read faults in CMD, which writes nothing.
rsweep() {
  local name=$1; shift
  local want_rc total n rc
  (cd "$R" && shim FAULT_COUNT_FILE="$TMP/$name.count" "$@") >"$TMP/$name.out" 2>"$TMP/$name.err"
  want_rc=$?
  case $want_rc in 0|1) ok ;; *) fail "$name: the clean run exits $want_rc"; return ;; esac
  total=$(awk '$1 == "reads" { print $2 }' "$TMP/$name.count")
  if [ -z "$total" ] || [ "$total" -lt 1 ]; then
    fail "$name: the shim counted ${total:-no} reads"; return
  fi
  local t0=$r_tried a0=$r_answers
  for n in $(picks "$total"); do
    (cd "$R" && shim FAULT_READ_AT=$n "$@") >"$TMP/$name.$n.out" 2>"$TMP/$name.$n.err"
    rc=$?
    r_tried=$((r_tried + 1))
    if [ $rc = 2 ]; then r_exits2=$((r_exits2 + 1)); ok
    else
      r_answers=$((r_answers + 1))
      fail "$name: read $n of $total failed (EIO), and the run exits $rc, an answer"
      sed 's/^/  stderr: /' "$TMP/$name.$n.err" | head -3 >&2
    fi
    (cd "$R" && shim FAULT_READ_AT=$n FAULT_READ=short "$@") >"$TMP/$name.$n.sout" 2>"$TMP/$name.$n.serr"
    rc=$?
    if [ $rc = "$want_rc" ] && cmp -s "$TMP/$name.out" "$TMP/$name.$n.sout"; then
      r_short=$((r_short + 1)); ok
    else
      fail "$name: read $n of $total came back short: exit $rc (clean: $want_rc), or another answer"
      diff "$TMP/$name.out" "$TMP/$name.$n.sout" | head -5 >&2
      sed 's/^/  stderr: /' "$TMP/$name.$n.serr" | head -3 >&2
    fi
  done
  echo "$name: $total reads; $((r_tried - t0)) tried with EIO, $((r_answers - a0)) answers given"
}
rsweep check_file "$SI" --check mixed.safetensors
rsweep check_snap "$SI" --check snap
rsweep diff_same "$SD" snap/model.safetensors snap/model.safetensors
rsweep diff_differ "$SD" mixed.safetensors mixed.bf16.safetensors
rsweep verify_cache "$SI" --verify clean
rsweep verify_sidecar "$SI" --verify sidecar/model.safetensors
echo "readers: $r_tried reads failed, $r_exits2 exits 2, $r_answers answers given; $r_short short reads gave the clean answer"

finish
