# Shared by tests/cli/stconvert*.sh: fixtures and comparisons.
# Source it after lib.bash:  . "$(dirname "$0")/stconvert_lib.bash"
SC="$BIN/stconvert"
D="$TESTDATA/stconvert"
[ -x "$SC" ] || { echo "stconvert not built"; exit 77; }
# The progress bar is for terminals only; make sure a test run never sees it.
export ST_NO_PROGRESS=1

# cmp_nan EXPECTED ACTUAL NANFILE: ACTUAL is EXPECTED byte for byte, except
# inside the NaN tensors listed in NANFILE ("BEGIN END DTYPE" per line, byte
# offsets in the file), where every element of ACTUAL must be a NaN of that
# dtype (PyTorch drops a NaN's sign and payload; FORMAT.md lets libst keep
# them). Prints why on a mismatch and returns 1.
cmp_nan() {
  local exp=$1 act=$2 nan=$3
  if [ ! -f "$act" ]; then echo "$act: missing"; return 1; fi
  local se sa
  se=$(stat -c %s "$exp"); sa=$(stat -c %s "$act")
  if [ "$se" != "$sa" ]; then echo "$act: $sa bytes, expected $se"; return 1; fi
  local -a ranges=()
  local b e d
  while read -r b e d; do ranges+=("$b $e $d"); done <"$nan"
  local off x y r inside
  while read -r off x y; do
    off=$((off - 1)); inside=0
    for r in "${ranges[@]}"; do
      set -- $r
      if [ "$off" -ge "$1" ] && [ "$off" -lt "$2" ]; then inside=1; break; fi
    done
    if [ $inside = 0 ]; then
      echo "$act: byte $off differs from $exp outside the NaN tensors"; return 1
    fi
  done < <(cmp -l "$exp" "$act" 2>/dev/null)
  local size em mm v
  for r in "${ranges[@]}"; do
    set -- $r
    case $3 in
      F64) size=8 em=$((16#7FF0000000000000)) mm=$((16#000FFFFFFFFFFFFF)) ;;
      F32) size=4 em=$((16#7F800000)) mm=$((16#007FFFFF)) ;;
      F16) size=2 em=$((16#7C00)) mm=$((16#03FF)) ;;
      BF16) size=2 em=$((16#7F80)) mm=$((16#007F)) ;;
      *) echo "$nan: unknown dtype $3"; return 1 ;;
    esac
    for v in $(od -An -v -t x$size -j "$1" -N $(($2 - $1)) "$act"); do
      v=$((16#$v))
      if (( (v & em) != em || (v & mm) == 0 )); then
        echo "$act: a value at bytes [$1, $2) is not a $3 NaN"; return 1
      fi
    done
  done
  return 0
}

# expect_same NAME EXPECTED ACTUAL [NANFILE]: record a pass or a failure.
expect_same() {
  local name=$1 exp=$2 act=$3 nan=${4:-}
  local why
  if [ -n "$nan" ]; then
    if why=$(cmp_nan "$exp" "$act" "$nan"); then ok; else fail "$name: $why"; fi
  elif cmp -s "$exp" "$act"; then ok
  else fail "$name: $act differs from $exp"; fi
}

# no_temps NAME DIR: no temporary file or directory of stconvert or of the
# writer is left in DIR.
no_temps() {
  local left
  left=$(find "$2" -maxdepth 2 \( -name '.*.stconvert-*' -o -name '.*.tmp-*' \) 2>/dev/null)
  if [ -z "$left" ]; then ok; else fail "$1: temporaries left: $left"; fi
}

# expect_absent NAME PATH / expect_exists NAME PATH
expect_absent() { if [ ! -e "$2" ]; then ok; else fail "$1: $2 exists"; fi; }
expect_exists() { if [ -e "$2" ]; then ok; else fail "$1: $2 missing"; fi; }

# tree_sum DIR: a digest of every file's name and bytes under DIR, to show
# that a directory was left exactly as it was.
tree_sum() {
  (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) | sha256sum
}

# make_f32 PATH ELEMENTS [NAME]: a safetensors file with one F32 tensor NAME
# (default "w") of ELEMENTS values (bytes 0x3f: 0.747...), built with printf.
make_f32() {
  local path=$1 n=$2 name=${3:-w}
  local json len pad
  json="{\"$name\":{\"dtype\":\"F32\",\"shape\":[$n],\"data_offsets\":[0,$((n * 4))]}}"
  pad=$(( (8 - ${#json} % 8) % 8 ))
  json="$json$(printf '%*s' $pad '')"
  len=${#json}
  {
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((len & 255)) $((len >> 8 & 255)) $((len >> 16 & 255)) $((len >> 24 & 255)))"
    printf '\0\0\0\0'
    printf '%s' "$json"
    head -c $((n * 4)) /dev/zero | tr '\0' '\077'
  } >"$path"
}
mkdir -p "$TMP/stconvert"
