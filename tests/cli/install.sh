#!/usr/bin/env bash
# Install libst into a temporary prefix, then build examples/inventory.c
# against it twice: with pkg-config and with CMake's find_package(libst);
# both programs must run and list the tensors of a fixture.
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
run inv_bad 2 "$TMP/ex/inventory" "$TESTDATA/format/bad_truncated.safetensors"
expect_err inv_bad 'file truncated'
finish
