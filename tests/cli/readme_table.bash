# The table of tests/cli/readme_examples.sh: every command example of
# README.md, keyed by its text without the comment (see ex and not_run
# there). Sourced by readme_examples.sh.

# --- not run here ---------------------------------------------------------------
not_run 'bash .ci/demo' 'installs packages as root and builds the tree: the suite runs inside such a build'
not_run 'bash .ci/run' 'installs packages as root and runs every build and this suite'
not_run 'bash .ci/setup' 'apt-get as root'
not_run 'cmake -S . -B build -DCMAKE_BUILD_TYPE=Release' 'configures the build this suite runs in'
not_run 'cmake --build build -j' 'the build this suite runs in'
not_run 'ctest --test-dir build' 'runs this suite'
not_run 'ctest --test-dir build -j2 --output-on-failure' 'runs this suite'
not_run 'cmake --install build --prefix /usr/local' 'writes /usr/local as root (tests/cli/install.sh installs to a scratch prefix)'
not_run 'cmake -S . -B build-lib -DST_BUILD_TOOLS=OFF' 'a second configure of the tree'
not_run 'export LLAMA_DIR=$HOME/llama' 'the judge needs node and the npm package (network)'
not_run 'mkdir -p "$LLAMA_DIR" && (cd "$LLAMA_DIR" && npm i -E node-llama-cpp@3.21.1)' 'downloads from the npm registry'
not_run 'testdata/gguf/judge/run.sh build' 'needs node and node-llama-cpp; rewrites testdata (tests/cli/gguf_export.sh checks its ids)'
not_run 'strun --model-dir Qwen2.5-0.5B --ids 785,6722,315 --check ref-logits.safetensors' "needs Qwen2.5-0.5B's weights (1 GB download) and PyTorch's logits; tests/cli/strun.sh runs --check on testdata/llama/qwen2"

# --- run ------------------------------------------------------------------------
# The GPT-2 snapshot: 28 tensors; its parameters counted from the header.
ex 'stinfo models/gpt2' 0 'models/gpt2=gpt2' '' '
	f=models/gpt2/model.safetensors
	out_has "^tensors: +$(tensors $f | wc -l)\$"
	out_has "^parameters: .*\\($(commas "$(params $f)")\\)\$"'
ex "stinfo --all --json models/gpt2/model.safetensors | jq '.total'" 0 'models/gpt2=gpt2' '' '
	f=models/gpt2/model.safetensors
	is parameters "$(jq .parameters "$OUT")" "$(params $f)"
	is tensors "$(jq .tensors "$OUT")" "$(tensors $f | wc -l)"'
ex 'stinfo --check models/llama/' 0 'models/llama=llama' '' '
	out_has "^models/llama/: OK\$"'
# numpy's statistics of each tensor (testdata/stinfo/stats.expected).
ex 'stinfo --stats model.safetensors' 0 'model.safetensors=td/stinfo/stats.safetensors' '' '
	counts() { awk "{ print \$1, \$(NF-2), \$(NF-1), \$NF }" | sort; }
	is "NaN, Inf and zero counts" "$(grep -f <(cut -d" " -f1 "$TESTDATA/stinfo/stats.expected" | sed "s/.*/^& /") "$OUT" | counts)" \
		"$(counts <"$TESTDATA/stinfo/stats.expected")"
	read -r name min max mean std nan inf zeros < <(grep "^f32.mixed " "$TESTDATA/stinfo/stats.expected")
	is "f32.mixed min" "$(awk "\$1 == \"f32.mixed\" { printf \"%.4f\", \$3 }" "$OUT")" "$(printf %.4f "$min")"'
ex "stinfo --stats --tensors '*.layers.0.*' models/llama/" 0 'models/llama=llama' '' '
	n=$(tensors models/llama/*.safetensors | grep -c "\\.layers\\.0\\.")
	out_has "^selected: +$n of $(tensors models/llama/*.safetensors | wc -l) tensors"
	is "rows of layer 0" "$(grep -c "^model\\.layers\\.0\\." "$OUT")" "$n"
	is "rows of other tensors" "$(grep -Ec "^(model\\.(embed|norm|layers\\.1)|lm_head)" "$OUT")" 0'
ex 'stinfo -v models/llama/' 0 'models/llama=llama' '' '
	for f in models/llama/model-0000?-of-00002.safetensors; do
		out_has "^file: +$f\$"
		out_has "^  header: .*\\($(commas $(od -An -t u8 -N 8 $f | tr -d " ")) B\\)\$"
	done'
ex 'stinfo --markdown models/llama/' 0 'models/llama=llama' '' '
	out_has "^\\| total \\| $(tensors models/llama/*.safetensors | wc -l) \\| .*\\($(commas "$(params models/llama/*.safetensors)")\\)"
	out_has "^\\| lm\\\\_head\\.weight \\| F32 \\| \\[256, 32\\] \\| 8192 \\|"'
# The Q4_K matrix: 11 blocks of 256 weights in 144 bytes (ggml's block_q4_K).
ex "stinfo -m -T 'blk.0.*' llama-q4_k.gguf" 0 'llama-q4_k.gguf' '' '
	out_has "^\\| selected \\(--tensors\\) \\| 1 \\| 2\\.8K \\(2,816\\) \\| 1\\.6 kB \\(1,584 B\\) \\| 4\\.5 \\|\$"
	out_has "^\\| blk\\.0\\.attn\\\\_q\\.weight \\| Q4\\\\_K \\| 4\\.5 \\| \\[11, 256\\] \\| 2816 \\|"
	is "rows of other tensors" "$(grep -Ec "token|blk\\.1" "$OUT")" 0'
# KV cache: K and V, each layer, each KV head, head_dim values a token.
ex 'stinfo --memory --context 8192 models/llama/' 0 'models/llama=llama' '' '
	c=models/llama/config.json
	kv=$(jq "2 * .num_hidden_layers * .num_key_value_heads * (.hidden_size / .num_attention_heads)" $c)
	out_has "^F32 .* $((kv * 4)) B +[0-9.]+ MB \\($(commas $((kv * 4 * 8192))) B\\)"
	out_has "^BF16 .* $((kv * 2)) B +[0-9.]+ MB \\($(commas $((kv * 2 * 8192))) B\\)"'
ex 'stinfo --memory --context 8192 llama-q4_k.gguf' 0 'llama-q4_k.gguf' '' '
	kv=$((2 * 2 * 2 * 256 / 4)) # the metadata written above
	out_has "^F16 .*\\($(commas $((kv * 2))) B\\) +[0-9.]+ MB \\($(commas $((kv * 2 * 8192))) B\\)"'
# The .npy: NumPy format 1.0 header for <f4 (32,), then the tensor's bytes.
ex 'stinfo --dump model.norm.weight --output norm.npy models/llama/' 0 'models/llama=llama' '' '
	shard=models/llama/$(jq -r ".weight_map[\"model.norm.weight\"]" models/llama/model.safetensors.index.json)
	is magic "$(head -c 8 norm.npy | od -An -t x1 | tr -d " ")" 934e554d50590100
	hl=$(od -An -t u2 -j 8 -N 2 norm.npy | tr -d " ")
	holds "npy header: dtype and shape" grep -q "{.descr.: .<f4., .fortran_order.: False, .shape.: (32,), }" <(head -c $((10 + hl)) norm.npy)
	same "npy data: the tensor'"'"'s bytes" <(tail -c +$((11 + hl)) norm.npy) <(tensor_bytes "$shard" model.norm.weight)'
ex 'stinfo DeepSeek-V3-FP8/' 0 'DeepSeek-V3-FP8=td/quant/snap-fp8' '' '
	b=$(jq -r ".quantization_config.weight_block_size | join(\"x\")" DeepSeek-V3-FP8/config.json)
	n=$(tensors DeepSeek-V3-FP8/model.safetensors | grep -c "_scale_inv F32 ")
	out_has "FP8 E4M3, block-scaled $b, $n weights? with F32 scales\$"'
# gpt-oss: an MXFP4 byte holds two 4-bit values; the scales are not counted.
ex "stinfo --json gpt-oss-20b/ | jq '.quantization.parameters_without_scales'" 0 'gpt-oss-20b=td/quant/snap-mxfp4' '' '
	want=$(header gpt-oss-20b/model.safetensors | jq "[to_entries[] | select(.key != \"__metadata__\") |
		select(.key | endswith(\"_scales\") | not) |
		(.value.shape | reduce .[] as \$d (1; . * \$d)) * (if (.key | endswith(\"_blocks\")) then 2 else 1 end)] | add")
	is "parameters without scales" "$(cat "$OUT")" "$want"'
ex 'stinfo --check DeepSeek-V3-FP8/' 0 'DeepSeek-V3-FP8=td/quant/snap-fp8' '' '
	out_has "^DeepSeek-V3-FP8/: OK\$"'
# The cache of testdata/verify/cases/clean: its count is gen_verify.py's (hashlib).
ex 'stinfo --verify ~/.cache/huggingface/hub' 0 '.cache/huggingface/hub=td/verify/cases/clean' '' '
	out_has "^$PWD/\\.cache/huggingface/hub: OK $(sed -n "s/^clean: OK //p" "$GOLDEN/verify/clean.out" | sed "s/[()]/\\\\&/g")\$"'
ex 'stinfo --hash model/ > model/SHA256SUMS' 0 'model=td/gpt2/tiny-f32' '' '
	holds "sha256sum -c model/SHA256SUMS" sh -c "cd model && sha256sum -c --strict --quiet SHA256SUMS"
	is "files listed" "$(wc -l <model/SHA256SUMS)" "$(find model -type f ! -name SHA256SUMS | wc -l)"
	holds "stinfo --verify model/ checks it" stinfo --verify model/'
ex "stconvert models/gpt2 gpt2-bf16 --to bf16 --keep '*ln_*' --shard-size 200MB" 0 'models/gpt2=gpt2' 'gpt2-bf16' '
	holds "one file under 200MB" test -f gpt2-bf16/model.safetensors
	is "tensors not as asked" "$(tensors gpt2-bf16/*.safetensors |
		awk "(\$1 ~ /ln_/ && \$2 != \"F32\") || (\$1 !~ /ln_/ && \$2 != \"BF16\")" | wc -l)" 0
	is "names and shapes" "$(tensors gpt2-bf16/*.safetensors | cut -d" " -f1,3)" "$(tensors models/gpt2/model.safetensors | cut -d" " -f1,3)"'
# tiny-torch is tiny-f32's weights as GPT2LMHeadModel saves them, lm_head
# sharing wte's storage: written once, under one name.
ex 'stconvert pytorch_model.bin model.safetensors' 0 'pytorch_model.bin=td/gpt2/tiny-torch/pytorch_model.bin' 'torch-model.safetensors=model.safetensors' '
	is tensors "$(tensors model.safetensors | wc -l)" 32
	same "lm_head.weight is tiny-f32'"'"'s wte.weight" <(tensor_bytes model.safetensors lm_head.weight) \
		<(tensor_bytes "$TESTDATA/gpt2/tiny-f32/model.safetensors" wte.weight)
	same "transformer.h.1.mlp.c_fc.weight is tiny-f32'"'"'s" <(tensor_bytes model.safetensors transformer.h.1.mlp.c_fc.weight) \
		<(tensor_bytes "$TESTDATA/gpt2/tiny-f32/model.safetensors" h.1.mlp.c_fc.weight)'
# ckpt.zip.bin: {"state_dict": ..., "epoch", "lr", "name", "optimizer"} (gen_formats.py).
ex 'stconvert --key state_dict epoch3.pt model.safetensors' 0 'epoch3.pt=td/torch/ckpt.zip.bin' '' '
	holds "the state_dict torch.load gives (ckpt.expected.safetensors)" \
		stdiff --exact -q model.safetensors "$TESTDATA/torch/ckpt.expected.safetensors"
	is "tensors" "$(tensors model.safetensors | cut -d" " -f1,3)" "$(tensors "$TESTDATA/torch/ckpt.expected.safetensors" | cut -d" " -f1,3)"'
ex 'stconvert llama-bin/ llama-st/' 0 'llama-bin=td/torch/sharded' '' '
	holds "shards named as the .bin ones" test -f llama-st/model-00001-of-00002.safetensors -a -f llama-st/model-00002-of-00002.safetensors
	is "index: the input'"'"'s names less the tied alias" \
		"$(jq -r ".weight_map | keys[]" llama-st/model.safetensors.index.json | tr "\n" " ")" \
		"$(jq -r ".weight_map | keys[]" llama-bin/pytorch_model.bin.index.json | grep -v "^lm_head.weight\$" | tr "\n" " ")"'
ex "stinfo --json epoch3.pt | jq '.files[0].pytorch'" 0 'epoch3.pt=td/torch/ckpt.zip.bin' '' '
	is "key read" "$(jq -r .key "$OUT")" state_dict
	is "skipped" "$(jq -r ".skipped_keys | sort | join(\",\")" "$OUT")" epoch,lr,name,optimizer'
# snap-fp8.bf16.safetensors: PyTorch's dequantization (gen_quant.py).
ex 'stconvert --to bf16 DeepSeek-V3-FP8/ deepseek-v3-bf16/' 0 'DeepSeek-V3-FP8=td/quant/snap-fp8' 'deepseek-v3-bf16' '
	holds "PyTorch'"'"'s dequantization to BF16" stdiff --exact -q deepseek-v3-bf16/ "$TESTDATA/quant/snap-fp8.bf16.safetensors"
	is "scales folded in" "$(tensors deepseek-v3-bf16/*.safetensors | grep -c scale)" 0'
# 128x128 blocks: one scale for each of these small matrices; norm and embedding as they were.
ex 'stconvert --to f8_e4m3 --keep "*embed*" --keep "*lm_head*" model/ model-fp8/' 0 'model=td/quant/snap-q' 'model-fp8' '
	is "tensors" "$(tensors model-fp8/*.safetensors | tr "\n" ";")" "$(printf "%s;" \
		"model.embed_tokens.weight F32 3,4" \
		"model.layers.0.mlp.down_proj.weight F8_E4M3 5,7" "model.layers.0.mlp.down_proj.weight_scale_inv F32 1,1" \
		"model.layers.0.mlp.up_proj.weight F8_E4M3 4,6" "model.layers.0.mlp.up_proj.weight_scale_inv F32 1,1" \
		"model.norm.weight BF16 7")"
	is "config block size" "$(jq -c .quantization_config.weight_block_size model-fp8/config.json)" "[128,128]"'
# ggml's own to_float of the Q4_K blocks (testdata/ggml/q4_k.f32).
ex 'stconvert model-Q4_K_M.gguf model.safetensors' 0 'model-Q4_K_M.gguf=q4_k.gguf' '' '
	is "tensor" "$(tensors model.safetensors)" "blk.0.ffn_up.weight F32 11,256"
	same "values are ggml'"'"'s" <(tensor_bytes model.safetensors blk.0.ffn_up.weight) "$TESTDATA/ggml/q4_k.f32"'
# A Llama-family GGUF (qwen3, matrices in Q5_0/Q5_1/Q4_1 as llama-quantize
# mixes them) as a snapshot: HF names, config.json from the metadata, and
# strun runs it (its greedy ids are the F32 original's).
ex 'stconvert model-Q4_K_M.gguf model/' 0 'model-Q4_K_M.gguf=td/gguf_llama/qwen3-mixed.gguf' '' '
	is "lm_head" "$(tensors model/model.safetensors | grep "^lm_head")" "lm_head.weight F32 256,32"
	is "model_type" "$(jq -r .model_type model/config.json)" qwen3
	is "head_dim" "$(jq .head_dim model/config.json)" 16
	holds "strun runs it" "$BIN/strun" --model-dir model --ids 1,5,17,42,99,200,255 --new-tokens 1 --greedy --print-ids'
# A vocabulary-only GGUF: its tokenizer files, which strun reads (Llama 3's
# BOS, then the ids Hugging Face recorded).
ex 'stconvert ggml-vocab-llama-bpe.gguf llama3-tokenizer/' 0 'ggml-vocab-llama-bpe.gguf=td/tokenizers/ggml-vocab-llama-bpe.gguf' '' '
	is "files" "$(ls llama3-tokenizer | tr "\n" " ")" "tokenizer.json tokenizer_config.json "
	is ids "$("$BIN/strun" --tokenize --tokenizer llama3-tokenizer --prompt "Hello world")" "128000,$(vocab_ids ggml-vocab-llama-bpe.gguf "Hello world")"'
# A snapshot with a tokenizer.json as a Q8_0 GGUF: the file llama.cpp ran
# (testdata/llama/gguf_export/make_exports.py's F32 export of the same
# snapshot is recorded; Q8_0 here: its type and its fallback rows).
ex 'stconvert --to q8_0 Qwen2.5-0.5B/ qwen2.5-q8_0.gguf' 0 'Qwen2.5-0.5B=td/llama/gguf_export/qwen2_tok' '' '
	err_has "matrices Q8_0 \(general.file_type 7\)\$"
	err_has "^stconvert: vocabulary: 256 tokens, tokenizer.ggml.model gpt2, pre qwen2\$"
	holds "stinfo reads it" "$BIN/stinfo" qwen2.5-q8_0.gguf'
# curl is a stand-in that reads the file of the URL's name here.
ex 'curl -sL "$URL/model.safetensors" | stinfo -' 0 'model.safetensors=td/gpt2/tiny-f32/model.safetensors' '' '
	out_has "^path: +<stdin>\$"
	out_has "^tensors: +$(tensors model.safetensors | wc -l)\$"
	out_has "^  header: .*\($(commas $(od -An -t u8 -N 8 model.safetensors | tr -d " ")) B\)\$"'
# ssh is a stand-in that runs the remote command here; tiny-bf16 is
# tiny-f32 rounded by PyTorch.
ex "stconvert model.safetensors - --to bf16 | ssh host 'cat > model-bf16.safetensors'" 0 'model.safetensors=td/gpt2/tiny-f32/model.safetensors' '' '
	holds "PyTorch'"'"'s BF16 of it" stdiff --exact -q model-bf16.safetensors "$TESTDATA/gpt2/tiny-bf16/model.safetensors"
	is "dtypes" "$(tensors model-bf16.safetensors | cut -d" " -f2 | sort -u)" BF16'
# Every F8_E4M3 and F8_E5M2 code, decoded by the OCP formulas (testdata/dtype/f8_decode.txt).
ex 'stconvert --to f32 fp8-activations.safetensors f32.safetensors' 0 'fp8-activations.safetensors=td/stinfo/stats.safetensors' '' '
	for ty in F8_E4M3 F8_E5M2; do
		same "$ty codes decoded as the OCP formulas" \
			<(f32_hex f32.safetensors "codes.$(tr A-Z a-z <<<$ty)" | sed -E "/^(7f|ff)800000\$/!s/^(7f|ff)[89a-f][0-9a-f]{5}\$/nan/") \
			<(awk -v t=$ty "\$1 == t { print \$3 }" "$TESTDATA/dtype/f8_decode.txt")
	done
	is "no F8/F4 left" "$(tensors f32.safetensors | grep -Ec " F(8|4)")" 0'
ex 'stconvert --strip-prefix model. --rename lm_head.=output. llama/ renamed/' 0 'llama=llama' '' '
	is "names" "$(tensors renamed/*.safetensors | cut -d" " -f1 | sort | tr "\n" " ")" \
		"$(jq -r ".weight_map | keys[]" llama/model.safetensors.index.json | sed "s/^model\\.//; s/^lm_head\\./output./" | sort | tr "\n" " ")"
	is "shards kept" "$(ls renamed/model-*-of-*.safetensors | wc -l)" "$(ls llama/model-*-of-*.safetensors | wc -l)"
	is "index renamed" "$(jq -r ".weight_map | keys[]" renamed/model.safetensors.index.json | sort | tr "\n" " ")" \
		"$(tensors renamed/*.safetensors | cut -d" " -f1 | sort | tr "\n" " ")"'
ex 'stconvert --force --to bf16 model/ model/' 0 'model=td/gpt2/tiny-f32' '' '
	holds "PyTorch'"'"'s BF16 of tiny-f32" stdiff --exact -q model/ "$TESTDATA/gpt2/tiny-bf16/"
	is "dtypes" "$(tensors model/model.safetensors | cut -d" " -f2 | sort -u)" BF16'
ex 'stdiff models/gpt2 gpt2-bf16' 0 'models/gpt2=gpt2 gpt2-bf16' '' '
	out_has "^$(tensors models/gpt2/model.safetensors | grep -vc ln_) tensors F32 → BF16, all exactly A rounded\$"'
# trap-qk: tiny-f32 with block 1's c_attn packed K, Q, V (trace/gen_fixtures.py):
# a difference, exit 1.
ex 'stdiff --markdown base/ tuned/ >> CARD.md' 1 'base=td/gpt2/tiny-f32 tuned=td/trace/trap-qk' '' '
	holds "CARD.md: a table row for h.1.attn.c_attn" grep -q "^| h\\.1\\.attn\\.c\\\\_attn" CARD.md
	is "rows that differ" "$(grep "^|" CARD.md | grep -c differ)" "$(grep -c "^| h\\.1\\.attn\\.c\\\\_attn.*differ" CARD.md)"'
ex 'stdiff --exact -q model.safetensors resharded/ && echo same' 0 'model.safetensors=td/stconvert/snap/model.safetensors resharded=td/stconvert/snap-sharded' '' '
	is stdout "$(cat "$OUT")" same'
ex "stdiff --json -T '*.attn.*' base/ tuned/ | jq '.tensors | sort_by(-.max_abs_diff) | .[:5]'" 0 'base=td/gpt2/tiny-f32 tuned=td/trace/trap-qk' '' '
	is "5 attention tensors" "$(jq -r ".[].name | select(test(\"\\\\.attn\\\\.\"))" "$OUT" | wc -l)" 5
	is "the worst: block 1'"'"'s c_attn" "$(jq -r ".[:2] | map(.name) | sort | join(\" \")" "$OUT")" "h.1.attn.c_attn.bias h.1.attn.c_attn.weight"
	is "the rest equal" "$(jq "[.[2:][].max_abs_diff] | max" "$OUT")" 0'
ex 'stdiff DeepSeek-V3-FP8/ deepseek-v3-bf16/' 0 'DeepSeek-V3-FP8=td/quant/snap-fp8 deepseek-v3-bf16' '' '
	out_has "^B is exactly A dequantized to BF16\$"
	out_has "^A: dequantized $(tensors DeepSeek-V3-FP8/*.safetensors | grep -c _scale_inv) FP8 weights"'
ex 'stdiff model/ model-fp8/' 0 'model=td/quant/snap-q model-fp8' '' '
	out_has "^B is exactly A quantized to F8_E4M3 \\(128×128 blocks\\)\$"'
ex "stdiff --json model-fp8/ model/ | jq '.dequantized, (.tensors | max_by(.max_rel_diff))'" 0 'model=td/quant/snap-q model-fp8' '' '
	is "dequantized side" "$(jq -s -c ".[0] | [.side, .fp8_weights, .block_size]" "$OUT")" \
		"[\"a\",$(tensors model-fp8/*.safetensors | grep -c " F8_E4M3 "),[128,128]]"
	is "worst tensor is quantized" "$(jq -s -r ".[1].dtype_a" "$OUT")" F8_E4M3'
ex 'stdiff pytorch_model.bin model.safetensors' 0 'pytorch_model.bin=td/gpt2/tiny-torch/pytorch_model.bin model.safetensors=torch-model.safetensors' '' '
	out_has "^transformer\\.wte\\.weight: tied alias of lm_head\\.weight, not stored in B\$"'
# tiny_fp32_hf: gen_llmc.py's snapshot of the llm.c file tiny_fp32.bin.
ex 'gpt2export gpt2_124M.bin gpt2-hf/ --check' 0 'gpt2_124M.bin=td/llmc/tiny_fp32.bin' '' '
	holds "the snapshot gen_llmc.py wrote" stdiff --exact -q gpt2-hf/ "$TESTDATA/llmc/tiny_fp32_hf/"
	out_has "max abs logit difference 0 "'
ex 'gpt2export gpt2-hf/ gpt2_124M.bin' 0 'gpt2-hf=td/llmc/tiny_fp32_hf' '' '
	same "the llm.c file gen_llmc.py wrote, byte for byte" gpt2_124M.bin "$TESTDATA/llmc/tiny_fp32.bin"'
# GPT-2 holds V*C + T*C + L*(12*C*C + 13*C) + 2*C parameters.
ex 'gpt2export --random tiny-gpt2/ --layers 2 --heads 4 --width 128 --seed 1' 0 '' '' '
	is config "$(jq -c "[.n_layer, .n_head, .n_embd]" tiny-gpt2/config.json)" "[2,4,128]"
	V=$(jq .vocab_size tiny-gpt2/config.json) T=$(jq .n_positions tiny-gpt2/config.json) C=128 L=2
	is parameters "$(params tiny-gpt2/model.safetensors)" $((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
	holds "GPT-2'"'"'s tokenizer" test -f tiny-gpt2/vocab.json -a -f tiny-gpt2/merges.txt'
ex 'gpt2run --model-dir models/gpt2 --prompt "The GPU is a" --new-tokens 30 --greedy' 0 'models/gpt2=gpt2' '' '
	err_has "prompt: 4 tokens "
	err_has "generated: 30 tokens "'
# llama.cpp's tokenizer tests give each vocabulary's ids of "Hello world".
ex 'gpt2run --model-dir models/gpt2 --tokenize --prompt "Hello world"' 0 'models/gpt2=gpt2' '' '
	is ids "$(cat "$OUT")" "$(vocab_ids ggml-vocab-gpt-2.gguf "Hello world")"'
ex 'gpt2run --tokenizer Meta-Llama-3-8B/tokenizer.json --tokenize --prompt "Hello world"' 0 'Meta-Llama-3-8B/tokenizer.json=td/tokenizers/llama-bpe.tokenizer.json' '' '
	is ids "$(cat "$OUT")" "128000,$(vocab_ids ggml-vocab-llama-bpe.gguf "Hello world")" # <|begin_of_text|> first'
ex 'gpt2run --tokenizer qwen2.5-0.5b-q8_0.gguf --tokenize --prompt "Hello world"' 0 'qwen2.5-0.5b-q8_0.gguf=td/tokenizers/ggml-vocab-qwen2.gguf' '' '
	is ids "$(cat "$OUT")" "$(vocab_ids ggml-vocab-qwen2.gguf "Hello world")"'
ex 'gpt2run --model-dir gpt2-bf16 --ids 464,3290 --check reference-logits.safetensors --atol 1e-2' 0 'gpt2-bf16 reference-logits.safetensors=gpt2-logits.safetensors' '' '
	out_has ": OK \\(atol 0\\.01, 2 positions x 50257 logits\\)\$"'
ex 'gpt2run --model-dir models/gpt2 --ids 464,3290 --trace ours.safetensors' 0 'models/gpt2=gpt2' 'gpt2-trace.safetensors=ours.safetensors' '
	holds "logits of 2 positions" grep -q " F32 2,50257\$" <(tensors ours.safetensors)'
# trace_ref.safetensors: scripts/llama_trace_torch.py's trace of the same ids.
ex 'strun --model-dir testdata/llama/qwen3 --ids 5,17,42 --trace qwen3-ours.safetensors' 0 'testdata/llama/qwen3=td/llama/qwen3' '' '
	holds "PyTorch'"'"'s trace, stage by stage" stdiff --first testdata/llama/qwen3/trace_ref.safetensors qwen3-ours.safetensors'
ex 'scripts/gpt2_trace_torch.py models/gpt2 --ids 464,3290 -o ref.safetensors' 0 'models/gpt2=gpt2 scripts/gpt2_trace_torch.py=src/scripts/gpt2_trace_torch.py' 'torch-trace.safetensors=ref.safetensors' '
	holds "logits of 2 positions" grep -q " F32 2,50257\$" <(tensors ref.safetensors)'
needs 'scripts/gpt2_trace_torch.py models/gpt2 --ids 464,3290 -o ref.safetensors' torch
ex 'stdiff --first ref.safetensors ours.safetensors' 0 'ref.safetensors=torch-trace.safetensors ours.safetensors=gpt2-trace.safetensors' '' '
	out_has "^no difference: $(tensors ref.safetensors | wc -l) tensors in A'"'"'s recorded order"'
needs 'stdiff --first ref.safetensors ours.safetensors' torch
# trap-cproj: tiny-f32 with block 1's (square) attn.c_proj.weight stored
# untransposed; trap-qk its c_attn packed K, Q, V (trace/gen_fixtures.py).
ex 'stdiff models/gpt2 my-port/' 1 'models/gpt2=td/gpt2/tiny-f32 my-port=td/trace/trap-cproj' '' '
	out_has "^differs: h\\.1\\.attn\\.c_proj\\.weight "
	out_has "^  B is A transposed \\(exactly\\)"
	is "tensors that differ" "$(grep -c "^differs:" "$OUT")" 1'
ex "stdiff --json models/gpt2 my-port/ | jq '.tensors[] | select(.diagnosis) | {name, diagnosis}'" 0 'models/gpt2=td/gpt2/tiny-f32 my-port=td/trace/trap-qk' '' '
	is names "$(jq -s -r "map(.name) | sort | join(\" \")" "$OUT")" "h.1.attn.c_attn.bias h.1.attn.c_attn.weight"
	is "order" "$(jq -s -c "map(.diagnosis.order) | unique" "$OUT")" "[[2,1,3]]"'
ex "stinfo --json models/llama/ | jq '.inventory.missing'" 0 'models/llama=llama' '' '
	is missing "$(jq -c . "$OUT")" "[]"'
ex 'gpt2export models/gpt2 gpt2-q8_0.gguf --type q8_0' 0 'models/gpt2=gpt2' 'gpt2-q8_0.gguf' '
	is "GGUF magic, version 3" "$(head -c 8 gpt2-q8_0.gguf | od -An -t x1 | tr -d " ")" 4747554603000000
	is "tensor count" "$(od -An -t u8 -j 8 -N 8 gpt2-q8_0.gguf | tr -d " ")" "$(tensors models/gpt2/model.safetensors | wc -l)"'
# Q8_0: 32 weights in 34 bytes (8.5 bits); the converter keeps wpe and 1-D tensors F32.
ex 'stinfo gpt2-q8_0.gguf' 0 'gpt2-q8_0.gguf' '' '
	out_has "^Q8_0 +$((1 + 4 * 2)) .* 8\\.5\$"
	out_has "^F32 +$((28 - 9)) .* 32\$"'
ex 'stinfo --check gpt2-q8_0.gguf' 0 'gpt2-q8_0.gguf' '' '
	out_has "^gpt2-q8_0\\.gguf: OK\$"'
# llama3-q4_0.gguf: testdata/llama/llama3 written by gguf-py (q/k rows permuted
# as convert_hf_to_gguf does, matrices through gguf-py's Q4_0 quantizer).
ex 'stdiff models/Llama-3.2-1B llama-q4_0.gguf' 0 'models/Llama-3.2-1B=llama llama-q4_0.gguf=td/gguf_llama/llama3-q4_0.gguf' '' '
	n=$(tensors models/Llama-3.2-1B/*.safetensors | wc -l)
	out_has "^$n tensors compared through the llama name map: .* 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal\$"
	is "matrices judged by Q4_0'"'"'s bound" "$(stdiff -v models/Llama-3.2-1B llama-q4_0.gguf | grep -c "F32 vs Q4_0, .*Q4_0'"'"'s error bound")" \
		"$(tensors models/Llama-3.2-1B/*.safetensors | grep -c "proj.weight")"'
ex 'stdiff --map gpt2 models/gpt2 gpt2-q8_0.gguf' 0 'models/gpt2=gpt2 gpt2-q8_0.gguf' '' '
	out_has "^$(tensors models/gpt2/model.safetensors | wc -l) tensors compared through the GPT-2 name map: .* 0 differ; .*: equal\$"'
ex "stdiff --map gpt2 --json models/gpt2 gpt2-q8_0.gguf | jq '.summary'" 0 'models/gpt2=gpt2 gpt2-q8_0.gguf' '' '
	is "compared, differ" "$(jq -c "[.compared, .differ, .within_tolerance]" "$OUT")" "[$(tensors models/gpt2/model.safetensors | wc -l),0,$((1 + 4 * 2))]"'
ex 'gpt2export gpt2-q8_0.gguf gpt2-back/' 0 'gpt2-q8_0.gguf' '' '
	is "tensors" "$(tensors gpt2-back/model.safetensors | wc -l)" 28
	holds "the tokenizer rebuilt: GPT-2'"'"'s ids of Hello world" grep -qx "$(vocab_ids ggml-vocab-gpt-2.gguf "Hello world")" \
		<(gpt2run --model-dir gpt2-back --tokenize --prompt "Hello world" 2>/dev/null)'
