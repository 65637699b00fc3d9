#!/bin/bash
# wc in bash: lines, words, bytes (chars in the C locale), longest line
l=0 w=0 c=0 m=0 L=0 files=()
for a in "$@"; do
  case $a in
    --lines) l=1 ;; --words) w=1 ;; --bytes) c=1 ;; --chars) m=1 ;; --max-line-length) L=1 ;;
    -?*) for ((i=1; i<${#a}; i++)); do case ${a:i:1} in l) l=1;; w) w=1;; c) c=1;; m) m=1;; L) L=1;;
           *) echo "wc: invalid option -- '${a:i:1}'" >&2; exit 1;; esac; done ;;
    *) files+=("$a") ;;
  esac
done
[ $((l+w+c+m+L)) -eq 0 ] && { l=1; w=1; c=1; }
count() {
  local data line nl=0 words=0 max=0 len rest
  IFS= read -r -d '' data
  local tmp=${data//[!$'\n']/}; nl=${#tmp}
  read -r -d '' -a arr <<< "$data"; words=${#arr[@]}
  while IFS= read -r line; do
    local col=0 i ch
    for ((i=0; i<${#line}; i++)); do ch=${line:i:1}
      if [ "$ch" = $'\t' ]; then col=$(( (col/8+1)*8 )); elif [[ $ch == [[:print:]] ]]; then col=$((col+1)); fi; done
    [ $col -gt $max ] && max=$col
  done <<< "$data"
  N=($nl $words ${#data} ${#data} $max)
}
if [ ${#files[@]} -eq 0 ]; then
  count; out=(); n=0
  for k in l w m c L; do eval "on=\$$k"; [ $on = 1 ] && n=$((n+1)); done
  width=1; [ $n -gt 1 ] && width=7; sp=
  [ $l = 1 ] && { printf '%s%*d' "$sp" $width ${N[0]}; sp=' '; }
  [ $w = 1 ] && { printf '%s%*d' "$sp" $width ${N[1]}; sp=' '; }
  [ $m = 1 ] && { printf '%s%*d' "$sp" $width ${N[2]}; sp=' '; }
  [ $c = 1 ] && { printf '%s%*d' "$sp" $width ${N[3]}; sp=' '; }
  [ $L = 1 ] && { printf '%s%*d' "$sp" $width ${N[4]}; sp=' '; }
  echo; exit 0
fi
status=0
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "wc: $f: No such file or directory" >&2; status=1; continue; }
  count < "$f"; echo "${N[0]} ${N[1]} ${N[3]} $f"
done
exit $status
