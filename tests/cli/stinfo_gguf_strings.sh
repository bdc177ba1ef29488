# stinfo on a hand-built GGUF whose strings (metadata keys and values, an
# array of strings, a tensor name) hold an escape sequence, C1 controls,
# a bidirectional override, a bell and bytes that are not UTF-8: text and
# --json output show each escaped (cli_printable, cli_json_string), never
# raw. Built here byte by byte (ggml's docs/gguf.md, version 3).
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TMP" || exit 1

u32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
u64() { u32 "$1"; u32 0; }
# gstr BYTES: a GGUF string (u64 length, then the bytes; printf escapes in BYTES)
gstr() { local n; n=$(printf "$1" | wc -c); u64 "$n"; printf "$1"; }
{
  printf 'GGUF'; u32 3; u64 1; u64 4
  gstr 'general.architecture'; u32 8; gstr 'llama'
  gstr 'general.name'; u32 8; gstr 'a\x1b[31mb\xc2\x9bc\xff\xfed'
  gstr 'k'; u32 8; gstr 'x\xc2\x85\xe2\x80\xaey'
  gstr 'list'; u32 9; u32 8; u64 2; gstr 'x\xc0\xafy'; gstr '\x07bell'
  gstr 't\xc2\x9b\xff'; u32 1; u64 4; u32 0; u64 0
} >head.bin
n=$(wc -c <head.bin)
{ cat head.bin; head -c $(( (32 - n % 32) % 32 )) /dev/zero; head -c 16 /dev/zero; } >s.gguf

run check 0 "$S" --check s.gguf
for mode in text all json; do
  case $mode in text) args=() ;; all) args=(--all) ;; json) args=(--json) ;; esac
  run "$mode" 0 "$S" "${args[@]}" s.gguf || continue
  # No raw ESC, BEL, C1 control or byte that is not UTF-8 reaches the output.
  if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$TMP/$mode.out"; then fail "$mode: a raw control byte"; else ok; fi
  if LC_ALL=C grep -q $'\xc2[\x80-\x9f]' "$TMP/$mode.out"; then fail "$mode: a raw C1 control"; else ok; fi
  if LC_ALL=C grep -q $'\xe2\x80\xae' "$TMP/$mode.out"; then fail "$mode: a raw bidi override"; else ok; fi
  iconv -f UTF-8 -t UTF-8 "$TMP/$mode.out" >/dev/null 2>&1 && ok || fail "$mode: output is not UTF-8"
done
for mode in text all; do
  expect_out "$mode" 'general\.name: +a\\x1b\[31mb\\u009bc\\xff\\xfed$'
  expect_out "$mode" '^ +k: +x\\u0085\\u202ey$'
  expect_out "$mode" '"x\\xc0\\xafy", "\\x07bell"'
  expect_out "$mode" '^t\\u009b\\xff '
done
expect_out json '"general\.name": \{"type": "string", "value": "a\\u001b\[31mb\\u009bc\\ufffd\\ufffdd"\}'
expect_out json '"k": \{"type": "string", "value": "x\\u0085\\u202ey"\}'
expect_out json '"value": \["x\\ufffd\\ufffdy", "\\u0007bell"\]'
expect_out json '\{"name": "t\\u009b\\ufffd", "dtype": "F32"'

# --check warns of each string that is not UTF-8, naming the key or the
# tensor (testdata/gguf/utf8_all.gguf: a key, a value, an array element
# and a tensor name; its --json is checked by check_common_gguf_info).
run utf8_check 0 "$S" --check "$TESTDATA/gguf/utf8_all.gguf"
expect_out utf8_check 'utf8_all\.gguf: OK \(4 warnings\)$'
expect_err utf8_check "key 'bad\\.\\\\xff\\\\xfekey': not valid UTF-8 \\(byte 4 is 0xff\\)"
expect_err utf8_check "key 'bad\\.value': string value not valid UTF-8 \\(byte 3 is 0xe9\\)"
expect_err utf8_check "key 'bad\\.array': element 1 not valid UTF-8 \\(byte 0 is 0x80\\)"
expect_err utf8_check "tensor 't\\\\xc0\\\\xafx': name not valid UTF-8 \\(byte 1 is 0xc0\\)"
run utf8_json 0 "$S" --json "$TESTDATA/gguf/utf8_all.gguf"
iconv -f UTF-8 -t UTF-8 "$TMP/utf8_json.out" >/dev/null 2>&1 && ok || fail "utf8_json: output is not UTF-8"
finish
