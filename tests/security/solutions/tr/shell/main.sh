#!/bin/bash
# tr in bash: translate, delete (-d), squeeze (-s), complement (-c), truncate (-t)
del=0 sq=0 comp=0 trunc=0 ops=()
for a in "$@"; do
  if [[ $a == -?* ]] && [ ${#ops[@]} -eq 0 ]; then
    for ((i=1; i<${#a}; i++)); do case ${a:i:1} in d) del=1;; s) sq=1;; c|C) comp=1;; t) trunc=1;;
      *) echo "tr: invalid option -- '${a:i:1}'" >&2; exit 1;; esac; done
  else ops+=("$a"); fi
done
[ ${#ops[@]} -eq 0 ] && { echo "tr: missing operand" >&2; exit 1; }
[ $del = 1 ] && [ $sq = 0 ] && [ ${#ops[@]} -gt 1 ] && { echo "tr: extra operand '${ops[1]}'" >&2; exit 1; }
[ $del = 0 ] && [ $sq = 0 ] && [ ${#ops[@]} -lt 2 ] && { echo "tr: missing operand after '${ops[0]}'" >&2; exit 1; }
ALL=(); for ((c=1; c<256; c++)); do printf -v o '\\%03o' $c; printf -v ch "$o"; ALL+=("$ch"); done
expand() {  # prints one character per array element into SET
  local s=$1 i=0 c d out=() k cls
  SET=()
  while [ $i -lt ${#s} ]; do
    if [ "${s:i:2}" = "[:" ] && [[ ${s:i} =~ ^\[:([a-z]+):\] ]]; then
      cls=${BASH_REMATCH[1]}
      for ch in "${ALL[@]}"; do [[ $ch == [[:$cls:]] ]] && SET+=("$ch"); done
      i=$((i + ${#cls} + 4)); continue
    fi
    c=${s:i:1}
    if [ "$c" = '\' ] && [ $((i+1)) -lt ${#s} ]; then
      i=$((i+1)); c=${s:i:1}
      if [[ $c == [0-7] ]]; then local oct=$c; while [ ${#oct} -lt 3 ] && [[ ${s:i+1:1} == [0-7] ]]; do i=$((i+1)); oct+=${s:i:1}; done
        printf -v c "\\$oct"
      else case $c in n) c=$'\n';; t) c=$'\t';; r) c=$'\r';; esac; fi
    fi
    i=$((i+1))
    if [ "${s:i:1}" = - ] && [ $((i+1)) -lt ${#s} ]; then
      d=${s:i+1:1}; i=$((i+2))
      printf -v lo '%d' "'$c"; printf -v hi '%d' "'$d"
      [ $hi -lt $lo ] && { echo "tr: range-endpoints of '$c-$d' are in reverse collating sequence order" >&2; exit 1; }
      for ((k=lo; k<=hi; k++)); do SET+=("${ALL[k-1]}"); done
    else SET+=("$c"); fi
  done
}
expand "${ops[0]}"; S1=("${SET[@]}")
S2=(); [ ${#ops[@]} -gt 1 ] && { expand "${ops[1]}"; S2=("${SET[@]}"); }
declare -A in1 map sqs
for ch in "${S1[@]}"; do in1["$ch"]=1; done
if [ $comp = 1 ]; then declare -A c1; S1=(); for ch in "${ALL[@]}"; do [ -z "${in1[$ch]}" ] && { c1["$ch"]=1; S1+=("$ch"); }; done
  unset in1; declare -A in1; for ch in "${S1[@]}"; do in1["$ch"]=1; done; fi
translate=0; [ $del = 0 ] && [ ${#ops[@]} -gt 1 ] && translate=1
if [ $translate = 1 ]; then
  [ ${#S2[@]} -eq 0 ] && { echo "tr: when not truncating set1, string2 must be non-empty" >&2; exit 1; }
  n1=${#S1[@]}; [ $trunc = 1 ] && [ $n1 -gt ${#S2[@]} ] && n1=${#S2[@]}
  for ((k=0; k<n1; k++)); do j=$k; [ $j -ge ${#S2[@]} ] && j=$((${#S2[@]}-1)); map["${S1[k]}"]=${S2[j]}; done
fi
if [ $sq = 1 ]; then
  if [ ${#ops[@]} -gt 1 ]; then for ch in "${S2[@]}"; do sqs["$ch"]=1; done; else for ch in "${S1[@]}"; do sqs["$ch"]=1; done; fi
fi
out= last=
while IFS= read -r -d '' -n 1 ch || [ -n "$ch" ]; do
  [ -z "$ch" ] && ch=$'\n'
  [ $del = 1 ] && [ -n "${in1[$ch]}" ] && continue
  [ $translate = 1 ] && [ -n "${map[$ch]+x}" ] && ch=${map[$ch]}
  [ $sq = 1 ] && [ -n "${sqs[$ch]}" ] && [ "$ch" = "$last" ] && continue
  out+=$ch; last=$ch
done
printf '%s' "$out"
