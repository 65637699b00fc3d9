#!/bin/bash
# rev in bash: reverse the characters of each line (stdin or files)
for a in "$@"; do
  case $a in -h|--help) echo "Usage: rev [options] [file ...]"; exit 0 ;; -?*) echo "rev: invalid option -- '${a#-}'" >&2; exit 1 ;; esac
done
reverse() { local o= i; for ((i=${#1}-1; i>=0; i--)); do o+=${1:i:1}; done; printf '%s' "$o"; }
revlines() {
  local l
  while IFS= read -r l; do reverse "$l"; printf '\n'; done
  [ -n "$l" ] && reverse "$l"
  return 0
}
status=0
if [ $# -eq 0 ]; then revlines; exit 0; fi
for f in "$@"; do
  if [ -f "$f" ]; then revlines < "$f"; else echo "rev: cannot open $f: No such file or directory" >&2; status=1; fi
done
exit $status
