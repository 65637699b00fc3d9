#!/usr/bin/env bash
# Rebuild the SovSim forks under data/forks/sovsim (see README.md in this folder).
# Usage: bash data/forks/sovsim/make_data.sh   (from the repository root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
# Complete forks are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
OUT=data/forks/sovsim

# The king's misreport removed at the round before the collapse: the parents are the shipped
# KCPR-M runs of scripted/random (data/sovsim, seeds 0-3); s0-0 and s0-3 collapse in round 3
# (fork at round 2), s0-1 and s0-2 in round 2 (fork at round 1). From the fork round on the
# king's announcement is the true pool; the `none` forks are the baseline.
for p in "0 2" "3 2" "1 1" "2 1"; do
  set -- $p
  parent=data/sovsim/sovsim-kcpr_m-scripted-random-s0-$1
  $LAB fork "$parent" --at round=$2 --intervene none --seeds 0..4 --out $OUT/misreport
  $LAB fork "$parent" --at round=$2 --intervene rule:setting=misreport,value=false \
    --seeds 0..4 --out $OUT/misreport
done

# A greedy king swapped for a sustainable one: the parents are the shipped KCPR runs of
# scripted/greedy_leader (the king takes all it may, the peasants little; data/sovsim,
# seeds 0-4), which collapse in round 1, so the swap is at round 1 (k = 1: no prefix).
for s in 0 1 2 3 4; do
  parent=data/sovsim/sovsim-kcpr-scripted-greedy_leader-s0-$s
  $LAB fork "$parent" --at round=1 --intervene none --seeds 0..2 --out $OUT/king
  $LAB fork "$parent" --at round=1 --intervene seat_model:seat=king,model=scripted/sustainable \
    --seeds 0..2 --out $OUT/king
done
