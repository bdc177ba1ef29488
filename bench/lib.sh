# bench/lib.sh - what the shell benchmarks share; source it after setting
# dir (the benchmark's temporary directory).
#
#   st_f32_file PATH SIZE_MB [DATA_CMD...]
#       a one-tensor F32 safetensors file "w" of SIZE_MB MiB, written by
#       hand (u64 LE header length, space-padded JSON), its data the
#       output of DATA_CMD (which must write exactly SIZE_MB MiB; default
#       random bytes)
#   time_one NAME CMD...
#       one run of CMD: wall seconds appended to $dir/NAME.t, CPU seconds
#       (user + system, GNU time) to $dir/NAME.c
#   summary <FILE
#       "median min max" of the numbers in FILE
#   rss CMD...
#       peak resident memory (KB, GNU time) of one run of CMD, or "?"
#   report LABEL NAME
#       a line of NAME's runs: wall median (min, max) and CPU median
#   ratio NAME1.t NAME2.t
#       the ratio of the two files' medians, two decimals

st_f32_file() {
	local path=$1 mb=$2
	shift 2
	local bytes=$((mb * 1024 * 1024))
	local hdr="{\"w\":{\"dtype\":\"F32\",\"shape\":[$((bytes / 4))],\"data_offsets\":[0,$bytes]}}"
	while [ $((${#hdr} % 8)) -ne 0 ]; do hdr="$hdr "; done
	local len=${#hdr}
	{
		printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) \
		          $(((len >> 16) & 255)) $(((len >> 24) & 255)) 0 0 0 0)"
		printf '%s' "$hdr"
		if [ $# -gt 0 ]; then "$@"; else head -c "$bytes" /dev/urandom; fi
	} >"$path"
	[ "$(stat -c %s "$path")" = $((8 + len + bytes)) ] || {
		echo "bench: $path: data is not $mb MiB" >&2; exit 2; }
}

time_one() {
	local name=$1 t0 t1
	shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %U %S' -o "$dir/time.out" "$@" >/dev/null
		awk '{ print $1 >> "'"$dir/$name.t"'"; print $2 + $3 >> "'"$dir/$name.c"'" }' \
			"$dir/time.out"
	else
		t0=$(date +%s.%N)
		"$@" >/dev/null
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >>"$dir/$name.t"
		echo 0 >>"$dir/$name.c"
	fi
}

summary() {
	sort -n | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

rss() {
	if [ -x /usr/bin/time ]; then
		{ /usr/bin/time -f '%M' "$@" >/dev/null; } 2>&1 | tail -1
	else
		echo "?"
	fi
}

report() {
	local m lo hi c
	read -r m lo hi < <(summary <"$dir/$2.t")
	read -r c _ _ < <(summary <"$dir/$2.c")
	printf '%-16s median %7.3f s (min %.3f, max %.3f)  CPU %.3f s\n' "$1" "$m" "$lo" "$hi" "$c"
}

ratio() {
	awk -v a="$(summary <"$dir/$1" | cut -d' ' -f1)" -v b="$(summary <"$dir/$2" | cut -d' ' -f1)" \
		'BEGIN { printf "%.2f", b ? a / b : 0 }'
}
