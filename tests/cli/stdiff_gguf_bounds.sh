# stdiff's default judgement of every quantized type: testdata/ggml_bounds
# holds, per type, F32 values (ref.gguf), ggml's own quantization of them
# by ggml_quantize_chunk (quant.gguf, with an importance matrix where the
# type takes one) and a copy with one byte of each tensor changed
# (damaged.gguf: damaged.txt says which), all made by make_fixtures.py
# apart from libst. With no tolerance given, every correct quantization is
# within its type's bound (the IQ lattice types: its block RMS figure) and
# every damaged tensor differs, named; --atol replaces the default.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
S=$BIN/stdiff
F=$TESTDATA/ggml_bounds
NEAREST="Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K Q8_1 IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4 NVFP4 Q1_0 Q2_0"
LATTICE="IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S"

run good 0 "$S" -v "$F/ref.gguf" "$F/quant.gguf"
expect_out good '^31 tensors compared by name: 0 identical, 31 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
for t in Q4_0 Q4_1 Q5_0 Q5_1 $NEAREST; do
	expect_out good "^within tolerance: $t \(F32 vs $t, [0-9]+ elements\): 0 mismatched \(0%\), max abs [0-9.e-]+, max rel [0-9.e-]+, (B is exactly A quantized to $t, )?$t's error bound \(at most [0-9.e-]+\)$"
done
# Made with an importance matrix: the legacy types' codes are nearest for
# one scale and the stored one a weighted fit, judged so; Q4_K as before.
for t in Q4_0 Q4_1 Q5_0 Q5_1 Q4_K; do
	expect_out good "^within tolerance: $t\.imatrix \(F32 vs $t, 512 elements\): 0 mismatched \(0%\), .*, $t's error bound \(at most [0-9.e-]+\)$"
done
for t in $LATTICE; do
	expect_out good "^within tolerance: $t \(F32 vs $t, 512 elements\): 0 mismatched \(0%\), .*, $t's error figure \(block RMS at most [0-9.e-]+\)$"
done
run good_json 0 "$S" --json "$F/ref.gguf" "$F/quant.gguf"
expect_out good_json '"name": "Q4_K", "dtype_a": "F32", "dtype_b": "Q4_K", "elements": 512, "values_compared": true, "verdict": "within tolerance", .*"mismatched": 0, .*"rtol": 0, "atol": [0-9.e-]+\}'

run damaged 1 "$S" "$F/ref.gguf" "$F/damaged.gguf"
expect_out damaged '^31 tensors compared by name: 0 identical, 0 within tolerance, 31 differ;.*: different$'
for n in Q4_0 Q4_1 Q5_0 Q5_1 Q4_0.imatrix Q4_1.imatrix Q5_0.imatrix Q5_1.imatrix Q4_K.imatrix $NEAREST; do
	t=${n%.imatrix}
	expect_out damaged "^differs: ${n/./\\.} \(F32 vs $t, [0-9]+ elements\): [1-9][0-9]* mismatched .*, $t's error bound"
done
for t in $LATTICE; do
	expect_out damaged "^differs: $t \(F32 vs $t, 512 elements\): 256 mismatched \(50%\), .*, $t's error figure"
done

# A tolerance given replaces the type's rule: loose, everything passes;
# tight, the correct quantizations differ too.
run loose 0 "$S" --atol 1e9 "$F/ref.gguf" "$F/damaged.gguf"
expect_out loose ': 0 identical, 31 within tolerance, 0 differ;.*: equal$'
run tight 1 "$S" --atol 1e-9 "$F/ref.gguf" "$F/quant.gguf"
expect_out tight ': 0 identical, 0 within tolerance, 31 differ;.*: different$'
finish
