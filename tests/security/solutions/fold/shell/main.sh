#!/bin/bash
# fold in bash: wrap lines at a width, -s at spaces, -b counting bytes
width=80 spaces=0 bytes=0
setw() {
  [[ $1 =~ ^[0-9]+$ ]] || { echo "fold: invalid number of columns: '$1'" >&2; exit 1; }
  [ "$1" -gt 0 ] || { echo "fold: invalid number of columns: '$1': Numerical result out of range" >&2; exit 1; }
  width=$1
}
while [ $# -gt 0 ]; do
  case $1 in
    --spaces) spaces=1 ;; --bytes) bytes=1 ;; --width=*) setw "${1#--width=}" ;;
    -w) setw "$2"; shift ;; -w*) setw "${1#-w}" ;;
    -[0-9]*) setw "${1#-}" ;;
    -?*) for ((i=1; i<${#1}; i++)); do case ${1:i:1} in s) spaces=1;; b) bytes=1;;
           *) echo "fold: invalid option -- '${1:i:1}'" >&2; exit 1;; esac; done ;;
  esac
  shift
done
adv() { if [ $bytes = 0 ] && [ "$2" = $'\t' ]; then echo $(( ($1/8+1)*8 )); else echo $(($1+1)); fi; }
doline() {
  local rest=$1 buf= col=0 i ch nc cut k
  for ((i=0; i<${#rest}; i++)); do
    ch=${rest:i:1}
    if [ $bytes = 1 ] || [ "$ch" != $'\t' ]; then nc=$((col+1)); else nc=$(( (col/8+1)*8 )); fi
    if [ $nc -gt $width ] && [ -n "$buf" ]; then
      cut=${#buf}
      if [ $spaces = 1 ]; then for ((k=${#buf}; k>0; k--)); do [ "${buf:k-1:1}" = ' ' ] && { cut=$k; break; }; done; fi
      printf '%s\n' "${buf:0:cut}"; buf=${buf:cut}
      col=0; for ((k=0; k<${#buf}; k++)); do col=$(adv $col "${buf:k:1}"); done
      if [ $bytes = 1 ] || [ "$ch" != $'\t' ]; then nc=$((col+1)); else nc=$(( (col/8+1)*8 )); fi
    fi
    buf+=$ch; col=$nc
  done
  printf '%s' "$buf"
}
while IFS= read -r line; do doline "$line"; printf '\n'; done
[ -n "$line" ] && doline "$line"
exit 0
