#!/bin/bash
# seq in bash: decimal arithmetic on integers scaled by 10^precision
sep=$'\n'; wide=0; ops=()
while [ $# -gt 0 ]; do
  case $1 in
    -w|--equal-width) wide=1 ;;
    -s) sep=$2; shift ;;
    --separator=*) sep=${1#--separator=} ;;
    -[0-9.]*) ops+=("$1") ;;
    -?*) echo "seq: invalid option -- '${1:1:1}'" >&2; exit 1 ;;
    *) ops+=("$1") ;;
  esac
  shift
done
case ${#ops[@]} in
  0) echo "seq: missing operand" >&2; exit 1 ;;
  1) f=1; i=1; l=${ops[0]} ;;
  2) f=${ops[0]}; i=1; l=${ops[1]} ;;
  3) f=${ops[0]}; i=${ops[1]}; l=${ops[2]} ;;
  *) echo "seq: extra operand '${ops[3]}'" >&2; exit 1 ;;
esac
for x in "$f" "$i" "$l"; do [[ $x =~ ^-?[0-9]*\.?[0-9]+$|^-?[0-9]+\.$ ]] || { echo "seq: invalid floating point argument: '$x'" >&2; exit 1; }; done
dec() { [[ $1 == *.* ]] && { local d=${1#*.}; echo ${#d}; } || echo 0; }
p=$(dec "$f"); [ $(dec "$i") -gt $p ] && p=$(dec "$i"); pl=$(dec "$l"); q=$p; [ $pl -gt $q ] && q=$pl
scale() { local x=$1 neg=; [[ $x == -* ]] && { neg=-; x=${x#-}; }; local ip=${x%%.*} fp=; [[ $x == *.* ]] && fp=${x#*.}
  while [ ${#fp} -lt $q ]; do fp+=0; done; echo "$neg$((10#${ip:-0}${fp:+$fp}))"; }
F=$(scale "$f"); I=$(scale "$i"); Lv=$(scale "$l")
[ "$I" -eq 0 ] && { echo "seq: invalid Zero increment value: '$i'" >&2; exit 1; }
fmt() { local v=$1 neg=; ((v < 0)) && { neg=-; v=$((-v)); }; local s=$v
  ((q > 0)) && { while [ ${#s} -le $q ]; do s=0$s; done; s=${s:0:${#s}-q}.${s:${#s}-q}; }
  ((p < q)) && [ $p -ge 0 ] && { local cut=$((q-p)); s=${s:0:${#s}-cut}; s=${s%.}; }
  echo "$neg$s"; }
out=(); v=$F
while { ((I > 0)) && ((v <= Lv)); } || { ((I < 0)) && ((v >= Lv)); }; do out+=("$(fmt $v)"); v=$((v+I)); done
[ ${#out[@]} -eq 0 ] && exit 0
if [ $wide = 1 ]; then w=0; for s in "${out[@]}" "$(fmt $Lv)"; do [ ${#s} -gt $w ] && w=${#s}; done
  for k in "${!out[@]}"; do s=${out[k]}; neg=; [[ $s == -* ]] && { neg=-; s=${s#-}; }
    while [ $((${#s}+${#neg})) -lt $w ]; do s=0$s; done; out[k]=$neg$s; done; fi
res=${out[0]}; for ((k=1; k<${#out[@]}; k++)); do res+=$sep${out[k]}; done
printf '%s\n' "$res"
