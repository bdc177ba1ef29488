#!/usr/bin/env bash
# Build the libFuzzer harnesses of libst into tests/fuzz/out (or $1):
# fuzz_header, fuzz_torch, fuzz_legacy, fuzz_tar, fuzz_index, fuzz_writer,
# fuzz_config_dtype, fuzz_gguf, fuzz_hf_vocab, fuzz_quant, fuzz_verify, fuzz_arch,
# and those of the GPT-2 tools: fuzz_tokenizer, fuzz_encode, fuzz_tok_gguf,
# fuzz_encode_vocab, fuzz_config,
# fuzz_llmc, fuzz_model, fuzz_llama_model,
# and of tools/common (with tools/fe): fuzz_order, fuzz_dequant.
# Needs clang with libFuzzer (Debian: clang-14 and libclang-rt-14-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/out}
cc=${CC:-clang}
mkdir -p "$out"
flags=(-g -O1 -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Wno-unused-function -D_GNU_SOURCE
       -D_FILE_OFFSET_BITS=64 -I"$root/include" -I"$root/libst"
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
libs=(-lcjson -lz -larchive -ldeflate -lcrypto -lpthread -lm)
cjson=$(pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
# The library once, as objects instrumented for coverage.
objs=()
for src in "$root"/libst/*.c; do
	obj="$out/$(basename "${src%.c}").o"
	"$cc" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" \
		$cjson -c "$src" -o "$obj"
	objs+=("$obj")
done
for t in fuzz_header fuzz_torch fuzz_legacy fuzz_tar fuzz_index fuzz_writer fuzz_config_dtype; do
	"$cc" "${flags[@]}" -DFUZZ_TARGET="$t" "$here/fuzz.c" "${objs[@]}" \
		"${libs[@]}" -o "$out/$t"
done
# The GGUF reader.
"$cc" "${flags[@]}" -DFUZZ_GGUF -DFUZZ_TARGET=fuzz_gguf "$here/fuzz.c" \
	"${objs[@]}" "${libs[@]}" -o "$out/fuzz_gguf"
# tokenizer.json as a GGUF vocabulary (libst/hf_gguf_vocab.c).
"$cc" "${flags[@]}" -DFUZZ_GGUF -DFUZZ_TARGET=fuzz_hf_vocab "$here/fuzz.c" \
	"${objs[@]}" "${libs[@]}" -o "$out/fuzz_hf_vocab"
"$cc" "${flags[@]}" -DFUZZ_QUANT -DFUZZ_TARGET=fuzz_quant "$here/fuzz.c" "${objs[@]}" \
	"${libs[@]}" -o "$out/fuzz_quant"
# The verifier and the listings it reads.
"$cc" "${flags[@]}" -DFUZZ_VERIFY -DFUZZ_TARGET=fuzz_verify "$here/fuzz.c" \
	"${objs[@]}" "${libs[@]}" -o "$out/fuzz_verify"
# The architecture module (config.json, the GPT-2 GGUF name map).
"$cc" "${flags[@]}" -DFUZZ_ARCH -DFUZZ_TARGET=fuzz_arch \
	-DST_TESTDATA="\"$root/testdata\"" "$here/fuzz.c" "${objs[@]}" \
	"${libs[@]}" -o "$out/fuzz_arch"
# The GPT-2 tools' code (tools/gpt2, and the tools/fe helpers it calls:
# cli for the progress bar and messages, json for the config and tokenizer,
# shortest for cli's float printing, paths for the installed tokenizer, and
# common/ckpt for the refusal of '-' as a snapshot).
gobjs=()
for src in "$root"/tools/gpt2/*.c "$root"/tools/fe/cli.c "$root"/tools/fe/json.c \
		"$root"/tools/fe/shortest.c "$root"/tools/fe/paths.c "$root"/tools/common/ckpt.c; do
	obj="$out/tools_$(basename "${src%.c}").o"
	"$cc" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" \
		-DST_DATADIR="\"$out/share\"" -DST_SOURCE_DIR="\"$root\"" \
		-I"$root/tools" $cjson -c "$src" -o "$obj"
	gobjs+=("$obj")
done
for t in fuzz_tokenizer fuzz_encode fuzz_tok_gguf fuzz_encode_vocab fuzz_config fuzz_llmc fuzz_model fuzz_llama_model; do
	"$cc" "${flags[@]}" -I"$root/tools" -DFUZZ_GPT2 -DFUZZ_TARGET="$t" \
		-DST_TESTDATA="\"$root/testdata\"" "$here/fuzz.c" "${gobjs[@]}" \
		"${objs[@]}" "${libs[@]}" -lonig -lutf8proc -o "$out/$t"
done
# The tools' shared modules (tools/common, and tools/fe's cli and json).
cobjs=()
for src in "$root"/tools/common/order.c "$root"/tools/fe/json.c "$root"/tools/fe/shortest.c \
		"$root"/tools/fe/cli.c; do
	obj="$out/common_$(basename "${src%.c}").o"
	"$cc" "${flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" \
		-I"$root/tools" $cjson -c "$src" -o "$obj"
	cobjs+=("$obj")
done
for t in fuzz_order fuzz_dequant; do
	"$cc" "${flags[@]}" -I"$root/tools" -DFUZZ_COMMON -DFUZZ_TARGET="$t" \
		-DST_TESTDATA="\"$root/testdata\"" "$here/fuzz.c" "${cobjs[@]}" \
		"${objs[@]}" "${libs[@]}" -o "$out/$t"
done
echo "built: $out/{fuzz_header,fuzz_torch,fuzz_legacy,fuzz_tar,fuzz_index,fuzz_writer,fuzz_gguf,fuzz_hf_vocab,fuzz_quant,fuzz_verify,fuzz_arch}"
echo "built: $out/{fuzz_tokenizer,fuzz_encode,fuzz_tok_gguf,fuzz_encode_vocab,fuzz_config,fuzz_llmc,fuzz_model,fuzz_llama_model}"
echo "built: $out/{fuzz_order,fuzz_dequant}"
