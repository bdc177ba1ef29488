# stconvert --rename FROM=TO and --strip-prefix P: the names written (file,
# sharded directory and its index, PyTorch .bin, new scale tensors and
# dequantized MXFP4 weights), the rules tried in order with the first match
# winning, clashes and empty names refused naming the tensors, rules that
# match nothing warned about. The data must follow its name: renaming back
# gives the references made without stconvert (gen_fixtures.py's canonical
# file, gen_sharded.py's, gen_quant.py's) byte for byte or --exact.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"
SD="$BIN/stdiff"
SI="$BIN/stinfo"
Q="$TESTDATA/quant"
T="$TESTDATA/torch"

# names FILE: the tensor names of a safetensors file, one a line, sorted.
names() { "$SI" --json "$1" | grep -o '"name": *"[^"]*"' | sed 's/.*: *"//; s/"$//' | sort; }

# ---- usage -------------------------------------------------------------------
run u_rename 2 "$SC" --rename nothing "$D/mixed.safetensors" "$TMP/x.safetensors"
expect_err u_rename "^stconvert: --rename: 'nothing' is not FROM=TO$"
run u_strip 2 "$SC" --strip-prefix '' "$D/mixed.safetensors" "$TMP/x.safetensors"
expect_err u_strip '^stconvert: --strip-prefix: the prefix is empty$'
expect_absent u_strip "$TMP/x.safetensors"

# ---- file to file: in order, the first rule that matches wins ----------------
run order 0 "$SC" -v --rename f32.=F. --rename f32.s=never. --strip-prefix h.0. \
  --rename h.0.ln_1=never. "$D/mixed.safetensors" "$TMP/order.safetensors"
expect_err order "^stconvert: tensor 'f32.special' as 'F.special': F32 copied$"
expect_err order "^stconvert: tensor 'h.0.ln_1.weight' as 'ln_1.weight': F32 copied$"
expect_err order "^stconvert: tensor 'int.i8': I8 copied$"
expect_err order "^stconvert: warning: --rename 'f32.s=never.' matches no tensor \(or an earlier rule took its names\)$"
expect_err order "^stconvert: warning: --rename 'h.0.ln_1=never.' matches no tensor"
want=$(names "$D/mixed.canonical.safetensors" | sed 's/^f32\./F./; s/^h\.0\.//' | sort)
[ "$(names "$TMP/order.safetensors")" = "$want" ] && ok || fail "order: names written"
# Renaming back gives the canonical file gen_fixtures.py wrote, byte for byte.
run back 0 "$SC" --rename F.=f32. --rename ln_=h.0.ln_ "$TMP/order.safetensors" "$TMP/back.safetensors"
expect_same back "$D/mixed.canonical.safetensors" "$TMP/back.safetensors"
# With --to: names and dtypes both; --keep and --drop match IN's names.
run to 0 "$SC" --to bf16 --keep 'h.0.*' --drop 'int.*' --strip-prefix h.0. --rename int.=never. \
  "$D/mixed.safetensors" "$TMP/to.safetensors"
expect_err to "warning: --rename 'int.=never.' matches no tensor"
run to_back 0 "$SC" --rename ln_=h.0.ln_ "$TMP/to.safetensors" "$TMP/to_back.safetensors"
run to_ref 0 "$SC" --to bf16 --keep 'h.0.*' --drop 'int.*' "$D/mixed.safetensors" "$TMP/to_ref.safetensors"
expect_same to_back "$TMP/to_ref.safetensors" "$TMP/to_back.safetensors"
# An empty FROM puts TO in front of every name.
run prefix 0 "$SC" --rename =model. "$D/mixed.safetensors" "$TMP/prefix.safetensors"
[ "$(names "$TMP/prefix.safetensors")" = "$(names "$D/mixed.canonical.safetensors" | sed 's/^/model./')" ] &&
  ok || fail "prefix: names written"

# ---- refused: a clash, an empty name; nothing written ------------------------
run clash 2 "$SC" --rename f32.=f64. "$D/mixed.safetensors" "$TMP/clash.safetensors"
expect_err clash "^stconvert: $D/mixed.safetensors: tensor 'f64.random' and tensor 'f32.random' would both be written as 'f64.random'$"
[ "$(wc -l <"$TMP/clash.err")" = 1 ] && ok || fail "clash: not one line"
expect_absent clash "$TMP/clash.safetensors"
run clash2 2 "$SC" --rename nan.f16=x --rename nan.bf16=x "$D/mixed.safetensors" "$TMP/clash.safetensors"
expect_err clash2 "tensor 'nan.f16' and tensor 'nan.bf16' would both be written as 'x'$"
run empty 2 "$SC" --strip-prefix scalar "$D/mixed.safetensors" "$TMP/clash.safetensors"
expect_err empty "^stconvert: $D/mixed.safetensors: tensor 'scalar': renamed to an empty name by 'scalar='$"
expect_absent empty "$TMP/clash.safetensors"
no_temps empty "$TMP"

# ---- directory to directory, sharded: the shards and the index ---------------
run dir 0 "$SC" --rename =model. --shard-size 3000 "$D/mixed.safetensors" "$TMP/dir"
expect_err dir 'out: 22 tensors, 11091 bytes \(11.1 kB\), 4 files \+ index'
# (the index writes non-ASCII as \uXXXX: echo -e reads it back)
keys=$(grep -o '"[^"]*": "model-' "$TMP/dir/model.safetensors.index.json" |
  sed 's/": "model-$//; s/^"//' | while read -r k; do echo -e "$k"; done | sort)
[ "$keys" = "$(names "$D/mixed.canonical.safetensors" | sed 's/^/model./')" ] && ok ||
  fail "dir: index names"
for f in "$TMP"/dir/model-0000?-of-00004.safetensors; do
  for n in $(names "$f"); do
    case $n in *[![:ascii:]]*) continue ;; esac
    grep -q "\"$n\": \"${f##*/}\"" "$TMP/dir/model.safetensors.index.json" ||
      { fail "dir: $n of ${f##*/} not in the index so"; continue 2; }
  done
  ok
done
run dir_back 0 "$SC" --strip-prefix model. --shard-size 3000 "$TMP/dir" "$TMP/dir_back"
for f in "$D"/shards-none/*.safetensors "$D/shards-none/model.safetensors.index.json"; do
  expect_same dir_back "$f" "$TMP/dir_back/${f##*/}"
done

# ---- PyTorch .bin shards to safetensors shards --------------------------------
# The first rule that matches wins: --strip-prefix takes model.*, and
# --rename =m. only what is left (lm_head.weight).
run torch 0 "$SC" -q --strip-prefix model. --rename =m. "$T/sharded3" "$TMP/torch"
want="embed_tokens.weight layers.0.input_layernorm.weight layers.0.mlp.up_proj.weight layers.0.self_attn.o_proj.weight layers.0.self_attn.q_proj.weight layers.1.input_layernorm.weight layers.1.mlp.up_proj.weight layers.1.rotary_emb.inv_freq layers.1.self_attn.k_proj.weight layers.1.self_attn.o_proj.weight layers.1.self_attn.q_proj.weight m.lm_head.weight norm.weight "
keys=$(grep -o '"[^"]*": "model-' "$TMP/torch/model.safetensors.index.json" | sed 's/": "model-$//; s/^"//' | sort | tr '\n' ' ')
[ "$keys" = "$want" ] && ok || fail "torch: index names: $keys"
[ "$(ls "$TMP/torch" | grep -c '^model-0000[1-3]-of-00003.safetensors$')" = 3 ] && ok ||
  fail "torch: not one shard per input shard"
run torch_back 0 "$SC" -q --rename m.lm_head=lm_head --rename =model. "$TMP/torch" "$TMP/torch_back.safetensors"
run torch_same 0 "$SD" --exact "$TMP/torch_back.safetensors" "$T/sharded3.all.safetensors"
run torch_file 0 "$SC" --rename enc.=encoder. "$T/ckpt.zip.bin" "$TMP/ckpt.safetensors"
[ "$(names "$TMP/ckpt.safetensors" | tr '\n' ' ')" = "dec.weight encoder.bias encoder.weight " ] &&
  ok || fail "torch_file: names written"
run torch_file_back 0 "$SC" --rename encoder.=enc. "$TMP/ckpt.safetensors" "$TMP/ckpt_back.safetensors"
run torch_file_same 0 "$SD" --exact "$TMP/ckpt_back.safetensors" "$T/ckpt.expected.safetensors"

# ---- new scale tensors and dequantized MXFP4 weights are renamed too -----------
run quant 0 "$SC" --to f8_e4m3 --block 2,3 --keep '*embed*' --strip-prefix model. "$Q/snap-q" "$TMP/q8"
if names "$TMP/q8/model.safetensors" | grep -q '^model\.'; then fail "quant: a name kept its prefix"; else ok; fi
names "$TMP/q8/model.safetensors" | grep -q '^layers\.0\.mlp\.down_proj\.weight_scale_inv$' && ok ||
  fail "quant: the new scale not renamed"
run quant_back 0 "$SC" --rename =model. "$TMP/q8" "$TMP/q8_back.safetensors"
run quant_same 0 "$SD" --exact "$TMP/q8_back.safetensors" "$Q/snap-q.f8.safetensors"
run mx 0 "$SC" --to bf16 --rename =x. "$Q/snap-mxfp4" "$TMP/mx"
run mx_back 0 "$SC" --strip-prefix x. "$TMP/mx" "$TMP/mx_back.safetensors"
run mx_same 0 "$SD" --exact "$TMP/mx_back.safetensors" "$Q/snap-mxfp4.bf16.safetensors"

finish
