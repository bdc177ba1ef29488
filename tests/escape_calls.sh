#!/usr/bin/env bash
# Every string from a file is escaped before a terminal or a JSON document
# gets it (doc/safety.md): a check that no output call of the tools
# (tools/**/*.c: printf, fprintf, dprintf, vprintf, vfprintf, fputs, puts,
# putchar, fputc, putc, fwrite, perror) prints an argument that could
# carry such a string without passing through the one escaping path of
# tools/fe/cli.c (cli_printable, cli_json_string, cli_print_name, and
# cli_warn / cli_die / cli_error, which pass every message line through
# cli_printable). tests/escape_calls.pl says what it accepts as safe;
# tests/escape_calls.allow lists, with the reason for each, the few calls
# it cannot prove safe by itself. A new printf("%s", name) on a raw name
# fails it, naming the file, line, function and argument.
#
#   bash tests/escape_calls.sh [ROOT]       (ctest: lint_tools_output_is_escaped)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
files=$(find tools -name '*.c' | LC_ALL=C sort)
[ -n "$files" ] || { echo "escape_calls.sh: no tools/**/*.c under $root" >&2; exit 2; }
n=$(grep -cE '(^|[^A-Za-z0-9_.>])(printf|fprintf|dprintf|vprintf|vfprintf|fputs|puts|putchar|fputc|putc|fwrite|perror)[[:space:]]*\(' $files |
    awk -F: '{s += $2} END {print s}')
if out=$(perl tests/escape_calls.pl tests/escape_calls.allow $files); then
	echo "escape_calls: $n output calls in $(echo "$files" | wc -l) files, each printing only escaped or fixed text"
	exit 0
fi
echo "$out" | sed 's/^/FAIL: /' >&2
echo "escape_calls: the calls above may print a string from a file unescaped: pass it through cli_printable or cli_json_string (tools/fe/cli.c), or, if it cannot carry one, say why in tests/escape_calls.allow" >&2
exit 1
