#!/bin/bash
# nl in bash: number body lines (styles a/t/n, formats ln/rn/rz)
style=t fmt=rn sep=$'\t' width=6 start=1 incr=1
while [ $# -gt 0 ]; do
  a=$1
  case $a in
    --number-separator=*) sep=${a#*=}; shift; continue ;;
    -[bnswvi]) v=$2; shift ;;
    -[bnswvi]?*) v=${a:2} ;;
    -?*) echo "nl: invalid option -- '${a:1:1}'" >&2; exit 1 ;;
    *) shift; continue ;;
  esac
  case ${a:1:1} in
    b) case $v in a|t|n) style=$v ;; *) echo "nl: invalid body numbering style: '$v'" >&2; exit 1 ;; esac ;;
    n) case $v in ln|rn|rz) fmt=$v ;; *) echo "nl: invalid line numbering format: '$v'" >&2; exit 1 ;; esac ;;
    s) sep=$v ;;
    w) [[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || { echo "nl: invalid line number field width: '$v'" >&2; exit 1; }; width=$v ;;
    v) start=$v ;;
    i) incr=$v ;;
  esac
  shift
done
no=$start
emit() {
  local line=$1
  if [ $style = a ] || { [ $style = t ] && [ -n "$line" ]; }; then
    case $fmt in ln) printf '%-*d' $width $no ;; rz) printf '%0*d' $width $no ;; *) printf '%*d' $width $no ;; esac
    printf '%s%s' "$sep" "$line"; no=$((no+incr))
  else
    printf '%*s%s' $((width + ${#sep})) '' "$line"
  fi
}
while IFS= read -r line; do emit "$line"; printf '\n'; done
[ -n "$line" ] && emit "$line"
exit 0
