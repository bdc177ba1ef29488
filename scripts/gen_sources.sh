#!/usr/bin/env bash
# gen_sources.sh - rewrite cmake/sources.cmake, the explicit lists of the
# library's and the tools' sources, from the files in the tree. Run it
# after adding or removing a source file, and review the diff: configure
# fails while a list and the tree disagree (cmake/sources.cmake says how).
set -eu
cd "$(dirname "$0")/.."
list() { # VAR DIR PATTERN
  echo "set($1"
  (cd "$2" 2>/dev/null && ls $3 2>/dev/null | LC_ALL=C sort | sed "s|^|  $2/|")
  echo ")"
}
{
  echo "# cmake/sources.cmake - every source file, listed (scripts/gen_sources.sh"
  echo "# writes it). CMakeLists.txt checks each list against its folder at"
  echo "# configure time, so a file added or removed without updating the list"
  echo "# stops the build with its name."
  list ST_SOURCES libst '*.c'
  list ST_HEADERS include/st '*.h'
  list ST_FE_SOURCES tools/fe '*.c'
  list ST_COMMON_SOURCES tools/common '*.c'
  list ST_GPT2_SOURCES tools/gpt2 '*.c'
  for t in stinfo stconvert stdiff gpt2export gpt2run strun; do
    [ -d tools/$t ] && list "ST_TOOL_SOURCES_$t" tools/$t '*.c'
  done
} > cmake/sources.cmake
echo "wrote cmake/sources.cmake"
