#!/bin/bash
# expand in bash: tabs to spaces (one size or a list of stops), -i initial only
stops=() initial=0
parse() {
  local s=$1 v
  [[ $s =~ ^[0-9,\ ]+$ ]] || { echo "expand: tab size contains invalid character(s): '${s//[0-9, ]/}'" >&2; exit 1; }
  IFS=', ' read -r -a vs <<< "$s"
  for v in "${vs[@]}"; do
    [ "$v" -eq 0 ] && { echo "expand: tab size cannot be 0" >&2; exit 1; }
    [ ${#stops[@]} -gt 0 ] && [ "$v" -le "${stops[-1]}" ] && { echo "expand: tab sizes must be ascending" >&2; exit 1; }
    stops+=("$v")
  done
}
while [ $# -gt 0 ]; do
  case $1 in
    -i|--initial) initial=1 ;;
    -t) parse "$2"; shift ;;
    --tabs=*) parse "${1#--tabs=}" ;;
    -t*) parse "${1#-t}" ;;
    -[0-9]*) parse "${1#-}" ;;
    -?*) echo "expand: invalid option -- '${1:1:1}'" >&2; exit 1 ;;
  esac
  shift
done
next() {
  local col=$1
  if [ ${#stops[@]} -eq 0 ]; then echo $(( (col/8+1)*8 ))
  elif [ ${#stops[@]} -eq 1 ]; then echo $(( (col/stops[0]+1)*stops[0] ))
  else for s in "${stops[@]}"; do [ $s -gt $col ] && { echo $s; return; }; done; echo $((col+1)); fi
}
doline() {
  local line=$1 out= col=0 lead=1 i ch t
  for ((i=0; i<${#line}; i++)); do
    ch=${line:i:1}
    if [ "$ch" = $'\t' ] && { [ $initial = 0 ] || [ $lead = 1 ]; }; then
      t=$(next $col); while [ $col -lt $t ]; do out+=' '; col=$((col+1)); done; continue
    fi
    [ "$ch" != ' ' ] && [ "$ch" != $'\t' ] && lead=0
    out+=$ch; col=$((col+1))
  done
  printf '%s' "$out"
}
while IFS= read -r line; do doline "$line"; printf '\n'; done
[ -n "$line" ] && doline "$line"
exit 0
