#!/usr/bin/env bash
# Build the libFuzzer harnesses of libst into tests/fuzz/out (or $1):
# fuzz_header, fuzz_torch, fuzz_index, fuzz_writer. Needs clang with
# libFuzzer (Debian: clang-14 and libclang-rt-14-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/out}
cc=${CC:-clang}
mkdir -p "$out"
flags=(-g -O1 -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Wno-unused-function -D_GNU_SOURCE
       -D_FILE_OFFSET_BITS=64 -I"$root/include" -I"$root/libst"
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
libs=(-lcjson -lz -lpthread -lm)
# The library once, as objects instrumented for coverage.
objs=()
for src in "$root"/libst/*.c; do
	obj="$out/$(basename "${src%.c}").o"
	"$cc" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" \
		-c "$src" -o "$obj"
	objs+=("$obj")
done
for t in fuzz_header fuzz_torch fuzz_index fuzz_writer; do
	"$cc" "${flags[@]}" -DFUZZ_TARGET="$t" "$here/fuzz.c" "${objs[@]}" \
		"${libs[@]}" -o "$out/$t"
done
echo "built: $out/{fuzz_header,fuzz_torch,fuzz_index,fuzz_writer}"
