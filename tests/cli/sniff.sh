# Say what a file is (issue: "other formats get jargon"): every tool that
# expects a safetensors checkpoint or a model folder and is given a GGUF
# file, a text file, an HTML page, a Git LFS pointer, an empty or a gzip
# file answers with one line that names what it found (st_sniff), exit 2,
# and no output file. stinfo, stdiff and stconvert read a GGUF file
# themselves; gpt2run and strun name the command that converts one.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1

cp "$TESTDATA/gguf/ok_v2.gguf" "$TMP/x.gguf"
printf 'hello, this is a README\n' > "$TMP/t.txt"
printf '<!DOCTYPE html>\n<html><body>404</body></html>\n' > "$TMP/page.safetensors"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize 548105171\n' 0 \
  > "$TMP/lfs.safetensors"
: > "$TMP/empty.safetensors"
printf '\037\213\010\000\000\000\000\000\000\003' > "$TMP/z.safetensors.gz"

# one_line NAME: stderr of the last run NAME is exactly one line.
one_line() {
  local n; n=$(wc -l < "$TMP/$1.err")
  if [ "$n" = 1 ]; then ok; else fail "$1: $n lines on stderr, expected 1"; sed 's/^/  /' "$TMP/$1.err" >&2; fi
}

for f in x.gguf t.txt page.safetensors lfs.safetensors empty.safetensors z.safetensors.gz; do
  case $f in
    x.gguf) what='this is a GGUF file' ;;
    t.txt) what='this is a text file' ;;
    page.*) what='this is an HTML/XML page' ;;
    lfs.*) what='git-lfs pointer' ;;
    empty.*) what='empty file' ;;
    z.*) what='gzip-compressed' ;;
  esac
  n=${f%%.*}
  if [ "$f" != x.gguf ]; then
    run "stinfo-$n" 2 "$BIN/stinfo" "$TMP/$f" && one_line "stinfo-$n" && expect_err "stinfo-$n" "$what"
  fi
  # (stdiff compares and stconvert converts a GGUF file: stdiff_gguf_files.sh,
  # stconvert_gguf.sh)
  [ "$f" = x.gguf ] && continue
  run "stdiff-$n" 2 "$BIN/stdiff" "$TMP/$f" "$TMP/$f" && one_line "stdiff-$n" && expect_err "stdiff-$n" "$what"
  run "stconvert-$n" 2 "$BIN/stconvert" "$TMP/$f" "$TMP/out-$n.safetensors" &&
    one_line "stconvert-$n" && expect_err "stconvert-$n" "$what"
  if [ -e "$TMP/out-$n.safetensors" ]; then fail "stconvert-$n: left an output file"; else ok; fi
done

# gpt2run and strun take a model folder (or a safetensors file, an index,
# a PyTorch checkpoint): anything else is named before anything is loaded.
for t in gpt2run strun; do
  run "$t-gguf" 2 "$BIN/$t" --model-dir "$TMP/x.gguf" --ids 1
  one_line "$t-gguf"
  expect_err "$t-gguf" "x.gguf: this is a GGUF file, not a snapshot: $t runs a Hugging Face snapshot folder"
  expect_err "$t-gguf" "'gpt2export .*x.gguf DIR'"
  expect_not_err "$t-gguf" "config.json: No such file"
  run "$t-text" 2 "$BIN/$t" --model-dir "$TMP/t.txt" --ids 1
  one_line "$t-text"
  expect_err "$t-text" "t.txt: this is a text file, not a snapshot folder"
  run "$t-missing" 2 "$BIN/$t" --model-dir "$TMP/none" --ids 1
  expect_err "$t-missing" "none: No such file or directory"
done
finish
