#!/usr/bin/env bash
# One flag vocabulary (issue "the command line as one product", item 1):
# README.md's table "Options every tool shares" against every tool's --help,
# its man page and its getopt, and each shared option run in its short and
# long form, in a pipe and on a terminal (script(1)).
#
# What is held to the table, for each of the six tools:
#  - a row marked "yes" is a --help line with that long option and exactly
#    that short one (a row without one: none, or a letter of the tool's
#    own list); a row marked "-" has no such --help line;
#  - the man page has an .It line with the same pair;
#  - across all tools a short letter stands for one long option only, and
#    the letters that are not shared are exactly README's "own" list;
#  - getopt takes exactly the letters --help lists: every other letter is
#    "invalid option";
#  - short and long forms give the same exit status and the same output.
. "$(dirname "$0")/lib.bash"
ROOT=$TESTDATA/..
README=$ROOT/README.md
TOOLS=(stinfo stconvert stdiff gpt2export gpt2run strun)
for t in "${TOOLS[@]}"; do
	[ -x "$BIN/$t" ] || { echo "$t not built"; exit 77; }
done

# ---- the table --------------------------------------------------------------

# Rows of README's table as "SHORT LONG MARK1..MARK6" (SHORT "." when none).
sed -n '/<!-- flags:begin -->/,/<!-- flags:end -->/p' "$README" |
	grep '^| ' | tail -n +3 |
	awk -F'|' '{
		short = $2; long = $3; gsub(/[` ]/, "", short); gsub(/`/, "", long)
		sub(/^ +/, "", long); split(long, w, " "); long = substr(w[1], 3)
		if (short == "") short = "."; else short = substr(short, 2, 1)
		printf "%s %s", short, long
		for (i = 5; i <= 10; i++) { m = $i; gsub(/ /, "", m); printf " %s", m }
		printf "\n"
	}' >"$TMP/table"
[ "$(wc -l <"$TMP/table")" -ge 10 ] && ok || fail "README: table of shared options not found"
# README's "own" letters per tool, as "TOOL LETTERS".
own=$(sed -n '/<!-- own:begin -->/,/<!-- own:end -->/p' "$README" | tr '\n' ' ')
own_letters() { # TOOL: the letters README says are TOOL's own, sorted
	local t=$1 pat
	case $t in gpt2run | strun) pat='`gpt2run` and `strun' ;; *) pat="\`$t" ;; esac
	printf '%s\n' "$own" | grep -o -- "$pat[^\`]*\`" | grep -o -- ' -[A-Za-z]' | tr -d ' -' | sort | tr -d '\n'
}

# ---- --help -----------------------------------------------------------------

# "SHORT LONG" for each option line of TOOL's --help (SHORT "." when none).
help_opts() {
	"$BIN/$1" --help | grep -E '^(  -[A-Za-z], |      )--[a-z]' |
		sed -E 's/^ +(-([A-Za-z]), )?--([a-z0-9-]+).*/\2 \3/; s/^ /. /'
}
for t in "${TOOLS[@]}"; do help_opts "$t" >"$TMP/help.$t"; done

col=0
for t in "${TOOLS[@]}"; do
	col=$((col + 1))
	while read -r short long marks; do
		mark=$(echo "$marks" | cut -d' ' -f"$col")
		line=$(grep -E "^[^ ]+ $long\$" "$TMP/help.$t")
		if [ "$mark" = yes ] && [ "$short" = . ]; then
			# no shared letter: a tool's own one (README's list) or none
			[ -n "$line" ] && ok || fail "$t --help: no --$long (README says it has)"
		elif [ "$mark" = yes ]; then
			[ "$line" = "$short $long" ] && ok ||
				fail "$t --help: want '$short --$long' (README), has '${line:-nothing}'"
		else
			[ -z "$line" ] && ok || fail "$t --help has --$long, README says it has not"
		fi
	done <"$TMP/table"
done

# One long option per letter, across every tool.
cat "$TMP"/help.* | grep -v '^\. ' | sort -u >"$TMP/pairs"
dups=$(cut -d' ' -f1 "$TMP/pairs" | uniq -d)
[ -z "$dups" ] && ok || fail "short options with two meanings: $(grep -E "^($(echo $dups | tr ' ' '|')) " "$TMP/pairs" | tr '\n' ';')"

# The letters that are not in the table are README's own list, per tool.
shared=$(awk '$1 != "." {print $1}' "$TMP/table" | tr -d '\n')
for t in "${TOOLS[@]}"; do
	mine=$(awk '$1 != "." {print $1}' "$TMP/help.$t" | tr -d "$shared\n" | fold -w1 | sort | tr -d '\n')
	want=$(own_letters "$t")
	[ "$mine" = "$want" ] && ok || fail "$t: own short options '$mine', README says '$want'"
done

# ---- man pages --------------------------------------------------------------

# .It lines of man/TOOL.1 with "Fl Fl x" spelled "Fl -x".
for t in "${TOOLS[@]}"; do
	grep '^\.It ' "$ROOT/man/$t.1" | sed 's/Fl Fl /Fl -/g' >"$TMP/man.$t"
	while read -r short long; do
		hit=$(grep -E -- "Fl -$long( |\$)" "$TMP/man.$t" | head -1)
		if [ -z "$hit" ]; then fail "man/$t.1: no .It line for --$long"; continue; fi
		if [ "$short" = . ]; then
			# the long option's own item: no short letter paired with it
			grep -E -- "Fl [A-Za-z]( Ar [a-z]+)? , Fl -$long( |\$)" "$TMP/man.$t" >/dev/null &&
				fail "man/$t.1: --$long has a short option, --help has none" || ok
		else
			grep -E -- "Fl $short( Ar [a-z]+)? , Fl -$long( |\$)" "$TMP/man.$t" >/dev/null && ok ||
				fail "man/$t.1: no '.It Fl $short , Fl -$long' (as --help)"
		fi
	done <"$TMP/help.$t"
done

# ---- getopt -----------------------------------------------------------------

# Every letter --help does not list is refused as an invalid option; every
# letter it lists is taken (whatever else then goes wrong).
for t in "${TOOLS[@]}"; do
	listed=$(awk '$1 != "." {print $1}' "$TMP/help.$t" | tr -d '\n')
	bad=
	for l in {a..z} {A..Z}; do
		"$BIN/$t" "-$l" </dev/null >/dev/null 2>"$TMP/opt.err"
		if grep -q "invalid option" "$TMP/opt.err"; then
			case $listed in *"$l"*) bad="$bad +$l" ;; esac
		else
			case $listed in *"$l"*) ;; *) bad="$bad -$l" ;; esac
		fi
	done
	[ -z "$bad" ] && ok || fail "$t: getopt and --help disagree on$bad (+: listed but refused, -: taken but not listed)"
done

# ---- short and long forms, in a pipe and on a terminal ----------------------

have_script=0
command -v script >/dev/null && have_script=1
# same NAME RC CMD... ::: ARGS-SHORT ::: ARGS-LONG: CMD with each argument
# list, in a pipe (stdout and stderr compared) and, with script(1), on a
# terminal (what it showed compared); both with exit status RC.
same() {
	local name=$1 rc=$2; shift 2
	local cmd=() a=() b=()
	while [ "$1" != ::: ]; do cmd+=("$1"); shift; done
	shift
	while [ "$1" != ::: ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	run "$name.s" "$rc" "${cmd[@]}" "${a[@]}" || return
	run "$name.l" "$rc" "${cmd[@]}" "${b[@]}" || return
	cmp -s "$TMP/$name.s.out" "$TMP/$name.l.out" && cmp -s "$TMP/$name.s.err" "$TMP/$name.l.err" &&
		ok || fail "$name: ${a[*]} and ${b[*]} print differently in a pipe"
	[ "$have_script" = 1 ] || return
	local k
	for k in s l; do
		local args
		[ $k = s ] && args=("${a[@]}") || args=("${b[@]}")
		ST_NO_PROGRESS=1 script -qec "$(printf '%q ' "${cmd[@]}" "${args[@]}")" /dev/null \
			>"$TMP/$name.$k.tty" 2>&1
		local got=$?
		[ "$got" = "$rc" ] && ok || fail "$name: ${args[*]} on a terminal: exit $got, expected $rc"
	done
	cmp -s "$TMP/$name.s.tty" "$TMP/$name.l.tty" && ok ||
		fail "$name: ${a[*]} and ${b[*]} print differently on a terminal"
}

G=$TESTDATA/gpt2/tiny-f32
D=$TESTDATA/stdiff
cd "$TMP" || exit 2
for t in "${TOOLS[@]}"; do
	same "help_$t" 0 "$BIN/$t" ::: -h ::: --help
	[ -s "$TMP/help_$t.s.out" ] && [ ! -s "$TMP/help_$t.s.err" ] && ok || fail "$t -h: not on stdout"
	same "version_$t" 0 "$BIN/$t" ::: -V ::: --version
done

# -q / --quiet: the exit status alone, or no report / timings.
same q_stinfo 0 "$BIN/stinfo" --check "$G/model.safetensors" ::: -q ::: --quiet
[ ! -s "$TMP/q_stinfo.s.out" ] && ok || fail "stinfo -q --check: printed"
same q_stinfo_invalid 1 "$BIN/stinfo" --check "$TESTDATA/format/bad_dup_name.safetensors" ::: -q ::: --quiet
[ ! -s "$TMP/q_stinfo_invalid.s.out" ] && ok || fail "stinfo -q --check: printed the verdict"
expect_err q_stinfo_invalid.s "tensor 'w': duplicate name"
printf 'not a checkpoint\n' >notes.safetensors
same q_stinfo_bad 2 "$BIN/stinfo" notes.safetensors ::: -q ::: --quiet
expect_err q_stinfo_bad.s 'notes.safetensors'
same q_stdiff 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors" ::: -q ::: --quiet
[ ! -s "$TMP/q_stdiff.s.out" ] && ok || fail "stdiff -q: printed"
same q_stconvert 0 "$BIN/stconvert" -f "$G/model.safetensors" q.safetensors --to bf16 ::: -q ::: --quiet
[ ! -s "$TMP/q_stconvert.s.err" ] && ok || fail "stconvert -q: a report"
same q_gpt2run 0 "$BIN/gpt2run" --model-dir "$G" --ids 1,2,3 -n 3 --greedy --print-ids ::: -q ::: --quiet
[ ! -s "$TMP/q_gpt2run.s.err" ] && [ -s "$TMP/q_gpt2run.s.out" ] && ok || fail "gpt2run -q: timings, or no text"
same q_strun 0 "$BIN/strun" --model-dir "$TESTDATA/llama/qwen2" --ids 1,2,3 -n 3 --greedy --print-ids ::: -q ::: --quiet
[ ! -s "$TMP/q_strun.s.err" ] && ok || fail "strun -q: timings"
same q_gpt2export 0 "$BIN/gpt2export" -f --random rnd --layers 1 --heads 2 --width 8 --vocab 16 --context 8 ::: -q ::: --quiet

# -v / --verbose
same v_stinfo 0 "$BIN/stinfo" "$TESTDATA/llama/llama3" ::: -v ::: --verbose
same v_stdiff 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors" ::: -v ::: --verbose
same v_stconvert 0 "$BIN/stconvert" -f "$G/model.safetensors" v.safetensors ::: -v ::: --verbose
expect_err v_stconvert.s 'wte.weight'

# -j N / --threads N: the same answer whatever the count.
same j_stinfo 0 "$BIN/stinfo" --stats "$G" ::: -j 1 ::: --threads 3
same j_stdiff 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors" ::: -j 1 ::: --threads 2
same j_gpt2run 0 "$BIN/gpt2run" -q --model-dir "$G" --ids 1,2,3 -n 3 --greedy ::: -j 1 ::: --threads 2
same j_strun 0 "$BIN/strun" -q --model-dir "$TESTDATA/llama/qwen2" --ids 1,2 -n 3 --greedy --print-ids ::: -j 1 ::: --threads 2
run j_conv1 0 "$BIN/stconvert" -q -j 1 --to bf16 "$TESTDATA/llama/llama3" j1.safetensors &&
	run j_conv3 0 "$BIN/stconvert" -q --threads 3 --to bf16 "$TESTDATA/llama/llama3" j3.safetensors &&
	{ cmp -s j1.safetensors j3.safetensors && ok || fail "stconvert -j 1 and --threads 3 write other bytes"; }
run j_bad 2 "$BIN/stconvert" -j 0 "$G/model.safetensors" j0.safetensors
[ ! -e j0.safetensors ] && ok || fail "stconvert -j 0: wrote a file"

# -T GLOB / --tensors GLOB
same T_stinfo 0 "$BIN/stinfo" "$G" ::: -T 'h.0.*' ::: --tensors 'h.0.*'
expect_out T_stinfo.s 'selected'
same T_stdiff 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors" ::: -T 'w.*' ::: --tensors 'w.*'

# -m / --markdown
same m_stinfo 0 "$BIN/stinfo" "$G" ::: -m ::: --markdown
expect_out m_stinfo.s '^\| '
same m_stdiff 1 "$BIN/stdiff" "$D/a.safetensors" "$D/b.safetensors" ::: -m ::: --markdown
expect_out m_stdiff.s '^\| '

# -f / --force: refused without, done with either.
cp "$G/model.safetensors" f.safetensors
run f_none 2 "$BIN/stconvert" -q "$G/model.safetensors" f.safetensors --to bf16
same f_stconvert 0 "$BIN/stconvert" -q "$G/model.safetensors" f.safetensors --to bf16 ::: -f ::: --force
run f_export_none 2 "$BIN/gpt2export" -q --random rnd --layers 1 --heads 2 --width 8 --vocab 16 --context 8
same f_gpt2export 0 "$BIN/gpt2export" -q --random rnd --layers 1 --heads 2 --width 8 --vocab 16 --context 8 ::: -f ::: --force

finish
