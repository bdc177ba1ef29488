# Strings from a file never reach the terminal raw (doc/safety.md): a
# tensor name in a shard index that holds an OSC title sequence, a bell
# and a C1 CSI comes out escaped in every tool's error line, and a file
# name holding an escape sequence is shown escaped by stinfo --hash on a
# terminal, while to a pipe --hash writes sha256sum's exact bytes.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
# raw_controls FILE: 0 when FILE holds ESC, BEL or a UTF-8 C1 control.
raw_controls() { LC_ALL=C grep -q $'\033\\|\007\\|\302[\200-\237]' "$1"; }

mkdir -p "$TMP/idx"
printf '{"metadata":{"total_size":4},"weight_map":{"a\\u001b]0;pwned\\u0007\\u009b2J":"model-00001-of-00002.safetensors"}}' \
  > "$TMP/idx/model.safetensors.index.json"
for t in stinfo stdiff stconvert; do
  case $t in
    stinfo) args=("$TMP/idx") ;;
    stdiff) args=("$TMP/idx" "$TMP/idx") ;;
    stconvert) args=("$TMP/idx" "$TMP/idx-out") ;;
  esac
  run "$t" 2 "$BIN/$t" "${args[@]}"
  if raw_controls "$TMP/$t.err"; then fail "$t: a control sequence reached stderr raw"; else ok; fi
  expect_err "$t" "tensor 'a\\\\x1b\]0;pwned\\\\x07\\\\u009b2J'"
done
run check 1 "$BIN/stinfo" --check "$TMP/idx"
if raw_controls "$TMP/check.out" || raw_controls "$TMP/check.err"; then fail "check: raw control sequence"; else ok; fi

mkdir -p "$TMP/names"
name=$(printf 'x\033]0;t\007.txt')
echo hi > "$TMP/names/$name"
# To a pipe: sha256sum's bytes, which sha256sum -c reads back.
run hash_pipe 0 "$BIN/stinfo" --hash "$TMP/names"
(cd "$TMP/names" && sha256sum -- "$name") > "$TMP/want.sums"
if cmp -s "$TMP/want.sums" "$TMP/hash_pipe.out"; then ok; else fail "hash_pipe: not sha256sum's line"; fi
# On a terminal (script(1) gives one): escaped.
if command -v script >/dev/null; then
  script -qec "\"$BIN/stinfo\" --hash \"$TMP/names\"" /dev/null > "$TMP/hash_tty.out" 2>&1
  if raw_controls "$TMP/hash_tty.out"; then fail "hash_tty: a control sequence reached the terminal"; else ok; fi
  if grep -q 'x\\x1b\]0;t\\x07\.txt' "$TMP/hash_tty.out"; then ok; else fail "hash_tty: name not shown escaped"; sed 's/^/  /' "$TMP/hash_tty.out" | od -c | head -5 >&2; fi
fi
finish
