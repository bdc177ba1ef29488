# What the tools print about the terminal they print to (issue "the command
# line as one product", item 9): a progress bar only on a terminal (script(1)
# gives one) and not with ST_NO_PROGRESS set, no escape sequence for
# TERM=dumb, and stdiff's arrow in ASCII outside a UTF-8 locale.
. "$(dirname "$0")/lib.bash"
command -v script >/dev/null || { echo "no script(1) (bsdutils)"; exit 77; }
unset ST_NO_PROGRESS

run random 0 "$BIN/gpt2export" --random "$TMP/m" --layers 1 --heads 2 --width 64 --vocab 300 --context 32
src=$TMP/m/model.safetensors

# tty NAME ENV... -- CMD...: run CMD on a pseudo-terminal with ENV, keep
# what the terminal showed in $TMP/NAME.tty.
tty() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" script -qec "$(printf '%q ' "$@")" /dev/null > "$TMP/$name.tty" 2>&1
}
has() { LC_ALL=C grep -q "$2" "$TMP/$1.tty"; }

tty xterm TERM=xterm -- "$BIN/stconvert" --to bf16 "$src" "$TMP/x1.safetensors"
if has xterm 'stconvert \[#*'; then ok; else fail "xterm: no progress bar"; fi
if has xterm $'\033\\[K'; then ok; else fail "xterm: no line clearing"; fi
tty dumb TERM=dumb -- "$BIN/stconvert" --to bf16 "$src" "$TMP/x2.safetensors"
if has dumb 'stconvert \[#*'; then ok; else fail "dumb: no progress bar"; fi
if has dumb $'\033'; then fail "TERM=dumb: an escape sequence was printed"; else ok; fi
tty noprog TERM=xterm ST_NO_PROGRESS=1 -- "$BIN/stconvert" --to bf16 "$src" "$TMP/x3.safetensors"
if has noprog 'stconvert \['; then fail "ST_NO_PROGRESS=1: a progress bar"; else ok; fi
if has noprog $'\033'; then fail "ST_NO_PROGRESS=1: an escape sequence"; else ok; fi
tty emptyprog TERM=xterm ST_NO_PROGRESS= -- "$BIN/stconvert" --to bf16 "$src" "$TMP/x4.safetensors"
if has emptyprog 'stconvert \[#*'; then ok; else fail "ST_NO_PROGRESS empty: no bar"; fi
# Not a terminal: nothing but the report.
run pipe 0 "$BIN/stconvert" --to bf16 "$src" "$TMP/x5.safetensors"
if LC_ALL=C grep -q $'\r\\|\033' "$TMP/pipe.err"; then fail "pipe: terminal control"; else ok; fi
tty stats TERM=dumb -- "$BIN/stinfo" --stats "$src"
if has stats 'stats \[#*'; then ok; else fail "stinfo --stats: no progress bar"; fi
if has stats $'\033'; then fail "stinfo --stats, TERM=dumb: an escape"; else ok; fi

# The arrow of stdiff's dtype tally: UTF-8 only in a UTF-8 locale.
D=$TESTDATA/stdiff
LC_ALL=C.UTF-8 run arrow_utf8 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors"
expect_out arrow_utf8 '^1 tensor F32 → F16, exactly A rounded$'
LC_ALL=C run arrow_c 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors"
expect_out arrow_c '^1 tensor F32 -> F16, exactly A rounded$'
LC_ALL= LC_CTYPE= LANG= run arrow_posix 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors"
expect_out arrow_posix '^1 tensor F32 -> F16, exactly A rounded$'
if LC_ALL=C grep -q $'[\x80-\xff]' "$TMP/arrow_c.out"; then fail "LC_ALL=C: non-ASCII output"; else ok; fi
finish
