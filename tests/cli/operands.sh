# One wording for a wrong number of operands in every tool that takes them
# (cli_operands): "missing operand: NAMES" for those missing, "extra
# operand 'X'" for the first one too many, then "Try 'TOOL --help'", exit 2.
. "$(dirname "$0")/lib.bash"
check() { # TOOL WANT-MESSAGE ARGS...
	local t=$1 want=$2; shift 2
	local name="$t-$#"
	run "$name" 2 "$BIN/$t" "$@" || return
	if [ "$(head -1 "$TMP/$name.err")" = "$t: $want" ]; then ok; else
		fail "$name: '$(head -1 "$TMP/$name.err")', want '$t: $want'"; fi
	expect_err "$name" "^Try '$t --help' for more information\.$"
}
check stinfo "missing operand: PATH"
check stdiff "missing operand: A and B"
check stdiff "missing operand: B" a
check stdiff "extra operand 'c'" a b c
check stconvert "missing operand: IN and OUT"
check stconvert "missing operand: OUT" a
check stconvert "extra operand 'c'" a b c
check gpt2export "missing operand: IN and OUT"
check gpt2export "missing operand: OUT" a
check gpt2export "extra operand 'c'" a b c
finish
