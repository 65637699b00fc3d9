#!/bin/bash
# cut in bash: -b/-c/-f lists, -d, -s, --complement, --output-delimiter
mode= list= delim=$'\t' dset=0 only=0 comp=0 odelim= oset=0
die() { echo "cut: $1" >&2; exit 1; }
while [ $# -gt 0 ]; do
  a=$1
  case $a in
    --complement) comp=1 ;;
    --output-delimiter=*) odelim=${a#*=}; oset=1 ;;
    -s) only=1 ;;
    -[bcfd]) [ $# -ge 2 ] || die "option requires an argument -- '${a:1}'"; v=$2; shift
             if [ ${a:1} = d ]; then [ ${#v} -le 1 ] || die "the delimiter must be a single character"; delim=$v; dset=1
             else [ -z "$mode" ] || die "only one list may be specified"; mode=${a:1}; list=$v; fi ;;
    -[bcfd]?*) v=${a:2}
             if [ ${a:1:1} = d ]; then [ ${#v} -le 1 ] || die "the delimiter must be a single character"; delim=$v; dset=1
             else [ -z "$mode" ] || die "only one list may be specified"; mode=${a:1:1}; list=$v; fi ;;
    -?*) die "invalid option -- '${a:1:1}'" ;;
  esac
  shift
done
[ -n "$mode" ] || die "you must specify a list of bytes, characters, or fields"
[ $dset = 1 ] && [ $mode != f ] && die "an input delimiter may be specified only when operating on fields"
[ $mode = c ] && mode=b
declare -A sel; openfrom=0
IFS=, read -r -a parts <<< "$list"
for p in "${parts[@]}"; do
  if [[ $p =~ ^([0-9]*)-([0-9]*)$ ]]; then
    lo=${BASH_REMATCH[1]:-1}; hi=${BASH_REMATCH[2]}
    [ "$lo" -ge 1 ] || die "fields are numbered from 1"
    if [ -z "$hi" ]; then { [ $openfrom = 0 ] || [ $lo -lt $openfrom ]; } && openfrom=$lo; continue; fi
    [ "$hi" -ge "$lo" ] || die "invalid decreasing range"
    for ((k=lo; k<=hi; k++)); do sel[$k]=1; done
  elif [[ $p =~ ^[0-9]+$ ]]; then [ "$p" -ge 1 ] || die "fields are numbered from 1"; sel[$p]=1
  else die "invalid field value '$p'"; fi
done
on() { local s=0; [ -n "${sel[$1]}" ] && s=1; [ $openfrom -gt 0 ] && [ $1 -ge $openfrom ] && s=1; [ $comp = 1 ] && s=$((1-s)); [ $s = 1 ]; }
[ $oset = 1 ] || { [ $mode = f ] && odelim=$delim; }
doline() {
  local line=$1 out= i first=1 prev=0
  if [ $mode = b ]; then
    for ((i=0; i<${#line}; i++)); do if on $((i+1)); then
      [ $prev -gt 0 ] && [ $prev -ne $i ] && [ $oset = 1 ] && out+=$odelim; out+=${line:i:1}; prev=$((i+1)); fi; done
    printf '%s\n' "$out"; return
  fi
  if [[ $line != *"$delim"* ]]; then [ $only = 1 ] || printf '%s\n' "$line"; return; fi
  local f=1 rest=$line field
  while :; do
    field=${rest%%"$delim"*}
    if on $f; then [ $first = 1 ] || out+=$odelim; out+=$field; first=0; fi
    [ "$field" = "$rest" ] && break
    rest=${rest#*"$delim"}; f=$((f+1))
  done
  printf '%s\n' "$out"
}
while IFS= read -r line; do doline "$line"; done
[ -n "$line" ] && doline "$line"
exit 0
