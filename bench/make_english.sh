#!/bin/sh
# make_english.sh OUT [BYTES] - writes about BYTES (default 1000000) of
# English text for bench_tokenizer and tiktoken_bench.mjs: the license texts
# in /usr/share/common-licenses (each once), then the README and copyright
# files under /usr/share/doc in name order, as valid UTF-8, ending at the
# last whole line before BYTES. The text depends on what the machine has
# installed; give its size and sha256 with any figure.
set -eu
out=${1:?usage: make_english.sh OUT [BYTES]}
bytes=${2:-1000000}
export LC_ALL=C
{
	# Several licenses are installed under two names; keep one of each.
	for f in /usr/share/common-licenses/*; do
		printf '%s %s\n' "$(sha256sum < "$f" | cut -c1-64)" "$f"
	done | sort -u -k1,1 | sort -k2 | cut -d' ' -f2 | while read -r f; do
		cat "$f"
		echo
	done
	for f in /usr/share/doc/*/README /usr/share/doc/*/README.gz /usr/share/doc/*/README.md \
	         /usr/share/doc/*/README.md.gz /usr/share/doc/*/copyright; do
		[ -f "$f" ] || continue
		case $f in *.gz) zcat "$f" ;; *) cat "$f" ;; esac
		echo
	done
} | iconv -c -f UTF-8 -t UTF-8 | head -c "$bytes" | sed '$d' > "$out"
n=$(wc -c < "$out")
if [ "$n" -lt $((bytes * 9 / 10)) ]; then
	echo "make_english.sh: only $n bytes of text found" >&2
	exit 1
fi
echo "$out: $n bytes, sha256 $(sha256sum < "$out" | cut -c1-64)"
