#!/bin/bash
# tac in bash: records ending with the separator, printed last to first
sep=$'\n'; before=0; files=()
while [ $# -gt 0 ]; do
  case $1 in
    -b|--before) before=1 ;;
    -s) [ $# -ge 2 ] || { echo "tac: option requires an argument -- 's'" >&2; exit 1; }; sep=$2; shift ;;
    --separator=*) sep=${1#--separator=} ;;
    -s*) sep=${1#-s} ;;
    -?*) echo "tac: invalid option -- '${1:1:1}'" >&2; exit 1 ;;
    *) files+=("$1") ;;
  esac
  shift
done
[ -n "$sep" ] || sep=$'\n'
tacdata() {
  local data=$1 recs=() r
  if [ $before = 1 ]; then
    local first=${data%%"$sep"*}
    [ "$first" = "$data" ] && { printf '%s' "$data"; return; }
    recs+=("$first"); data=${data:${#first}+${#sep}}
    while :; do
      r=${data%%"$sep"*}
      if [ "$r" = "$data" ]; then recs+=("$sep$data"); break; fi
      recs+=("$sep$r"); data=${data:${#r}+${#sep}}
    done
  else
    while [ -n "$data" ]; do
      r=${data%%"$sep"*}
      if [ "$r" = "$data" ]; then recs+=("$data"); break; fi
      recs+=("$r$sep"); data=${data:${#r}+${#sep}}
    done
  fi
  for ((i=${#recs[@]}-1; i>=0; i--)); do printf '%s' "${recs[i]}"; done
}
status=0
if [ ${#files[@]} -eq 0 ]; then IFS= read -r -d '' data; tacdata "$data"; exit 0; fi
for f in "${files[@]}"; do
  if [ -f "$f" ]; then IFS= read -r -d '' data < "$f"; tacdata "$data"
  else echo "tac: failed to open '$f' for reading: No such file or directory" >&2; status=1; fi
done
exit $status
