#!/usr/bin/env bash
# Install libst into a temporary prefix, then build examples/inventory.c
# against it three times: with pkg-config, and with CMake's
# find_package(libst) linking libst::st and libst::st_static; each program
# must run and list the tensors of a fixture. Then build
# examples/reshard.c with pkg-config: its output must be byte-identical
# to stconvert --shard-size's (same shard names, files and index); and
# examples/dequant.c, whose output must be stconvert --to bf16's, byte for
# byte, on the FP8 (and MXFP4) fixtures.
. "$(dirname "$0")/lib.bash"
build=$(dirname "$BIN")
src=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$TMP/prefix
if ! cmake --install "$build" --prefix "$prefix" >"$TMP/install.log" 2>&1; then
  fail "cmake --install failed"; cat "$TMP/install.log" >&2; finish; exit
fi
ok
for f in include/st.h include/st/file.h lib/pkgconfig/libst.pc lib/cmake/libst/libstConfig.cmake \
         share/man/man1/stinfo.1 share/man/man3/libst.3 bin/stinfo; do
  libdir_f=$(ls "$prefix"/$f "$prefix"/lib/*/"${f#lib/}" 2>/dev/null | head -1)
  if [ -n "$libdir_f" ]; then ok; else fail "not installed: $f"; fi
done
pcdir=$(dirname "$(find "$prefix" -name libst.pc | head -1)")
libdir=$(dirname "$pcdir")
fixture=$TESTDATA/index/sharded

# pkg-config, static build needs the private deps; use the shared library.
cflags=${ST_TEST_CFLAGS:-}
if PKG_CONFIG_PATH=$pcdir cc $cflags "$src/examples/inventory.c" \
     $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs libst) -Wl,-rpath,"$libdir" \
     -o "$TMP/inv_pc" 2>"$TMP/pc.err"; then ok; else fail "pkg-config build"; cat "$TMP/pc.err" >&2; fi
run inv_pc 0 "$TMP/inv_pc" "$fixture" && expect_out inv_pc '^3 tensors, 24 bytes, libst '

if cmake -S "$src/examples" -B "$TMP/ex" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_C_FLAGS="$cflags" >"$TMP/ex.log" 2>&1 &&
   cmake --build "$TMP/ex" >>"$TMP/ex.log" 2>&1; then ok; else fail "find_package build"; tail -20 "$TMP/ex.log" >&2; fi
LD_LIBRARY_PATH=$libdir run inv_cmake 0 "$TMP/ex/inventory" "$fixture" &&
  expect_out inv_cmake '^c.weight F32 3$'
run inv_static 0 "$TMP/ex/inventory_static" "$fixture" && expect_out inv_static '^c.weight F32 3$'
run inv_bad 2 "$TMP/ex/inventory" "$TESTDATA/format/bad_truncated.safetensors"
expect_err inv_bad 'file truncated'

if PKG_CONFIG_PATH=$pcdir cc $cflags "$src/examples/reshard.c" \
     $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs libst) -Wl,-rpath,"$libdir" \
     -o "$TMP/reshard" 2>"$TMP/reshard.err"; then ok; else fail "reshard build"; cat "$TMP/reshard.err" >&2; fi
# reshard_same NAME IN MAX FILE...: reshard and stconvert agree on every
# byte, and the output holds the FILEs (so the layout was exercised).
reshard_same() {
  local name=$1 in=$2 max=$3 f; shift 3
  run "${name}_reshard" 0 "$TMP/reshard" "$in" "$TMP/$name.reshard" "$max" || return
  run "${name}_stconvert" 0 "$BIN/stconvert" -q --shard-size "$max" "$in" "$TMP/$name.stconvert" || return
  if diff -r "$TMP/$name.reshard" "$TMP/$name.stconvert" >"$TMP/$name.diff"; then ok
  else fail "$name: reshard and stconvert differ"; head -5 "$TMP/$name.diff" >&2; fi
  for f in "$@"; do
    if [ -f "$TMP/$name.reshard/$f" ]; then ok; else fail "$name: no $f"; fi
  done
}
# 22 tensors, 12.5 kB, in 2000-byte shards: several shards and an index.
reshard_same mixed "$TESTDATA/stconvert/mixed.safetensors" 2000 \
  model.safetensors.index.json model-00005-of-00005.safetensors
# A snapshot directory: its config, tokenizer and sub/ come along.
reshard_same snap "$TESTDATA/stconvert/snap" 200 \
  config.json tokenizer_config.json vocab.txt sub/README.md model.safetensors.index.json
# A sharded input into one file (model.safetensors, no index).
reshard_same one "$TESTDATA/stconvert/snap-sharded" 1000000 model.safetensors config.json
if [ ! -e "$TMP/one.reshard/model.safetensors.index.json" ]; then ok; else fail "one: an index"; fi
run reshard_exists 2 "$TMP/reshard" "$TESTDATA/stconvert/mixed.safetensors" "$TMP/mixed.reshard" 2000
expect_err reshard_exists 'already exists'

if PKG_CONFIG_PATH=$pcdir cc $cflags "$src/examples/dequant.c" \
     $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs libst) -Wl,-rpath,"$libdir" \
     -o "$TMP/dequant" 2>"$TMP/dequant.err"; then ok; else fail "dequant build"; cat "$TMP/dequant.err" >&2; fi
# dequant_same NAME IN FILE...: dequant and stconvert --to bf16 agree on
# every byte of the whole output directory, which holds the FILEs.
dequant_same() {
  local name=$1 in=$2 f; shift 2
  run "${name}_dequant" 0 "$TMP/dequant" "$in" "$TMP/$name.dequant" || return
  run "${name}_stconvert" 0 "$BIN/stconvert" -q --to bf16 "$in" "$TMP/$name.stconvert" || return
  if diff -r "$TMP/$name.dequant" "$TMP/$name.stconvert" >"$TMP/$name.diff"; then ok
  else fail "$name: dequant and stconvert differ"; head -5 "$TMP/$name.diff" >&2; fi
  for f in "$@"; do
    if [ -f "$TMP/$name.dequant/$f" ]; then ok; else fail "$name: no $f"; fi
  done
}
Q=$TESTDATA/quant
# Block-scaled FP8 with its config.json (blocks 2x3) and tokenizer file.
dequant_same fp8 "$Q/snap-fp8" model.safetensors config.json tokenizer_config.json
run fp8_said 0 "$TMP/dequant" "$Q/snap-fp8" "$TMP/fp8-again.dequant" &&
  expect_out fp8_said '^2 FP8 and 0 MXFP4 weights dequantized, 2 scale tensors folded in$'
dequant_same dq "$Q/snap-dq" model.safetensors config.json
dequant_same ct "$Q/snap-ct" model.safetensors config.json
dequant_same mxfp4 "$Q/snap-mxfp4" model.safetensors config.json
# A sharded FP8 snapshot keeps its shards.
run fp8_shard 0 "$BIN/stconvert" -q --shard-size 100B "$Q/snap-fp8" "$TMP/fp8-sharded"
dequant_same sharded "$TMP/fp8-sharded" model-00002-of-00002.safetensors \
  model.safetensors.index.json config.json
# One file: the config.json beside it gives the blocks.
dequant_same fp8_file "$Q/snap-fp8/model.safetensors" model.safetensors
run dequant_exists 2 "$TMP/dequant" "$Q/snap-fp8" "$TMP/fp8.dequant"
expect_err dequant_exists 'already exists'
finish
