#!/bin/bash
# factor in bash: trial division with 64-bit shell arithmetic
one() {
  local s=$1 n d out
  [[ $s =~ ^\+?[0-9]+$ ]] || { echo "factor: '$s' is not a valid positive integer" >&2; return 1; }
  n=$((10#${s#+})); out="$n:"
  for ((d=2; d*d<=n; d+=(d==2?1:2))); do while ((n % d == 0)); do out+=" $d"; n=$((n/d)); done; done
  ((n > 1)) && out+=" $n"
  echo "$out"
}
status=0
if [ "$1" = "--" ]; then shift
elif [[ $1 == -[!0-9]* ]]; then echo "factor: invalid option -- '${1:1:1}'" >&2; exit 1; fi
if [ $# -gt 0 ]; then for a in "$@"; do one "$a" || status=1; done; exit $status; fi
while read -r -a words; do for a in "${words[@]}"; do one "$a" || status=1; done; done
exit $status
