#!/usr/bin/env bash
# Rebuild the SovSim forks under data/forks/sovsim (see README.md in this folder).
# Usage: bash data/forks/sovsim/make_data.sh   (from the repository root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
# Complete runs and forks are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
OUT=data/forks/sovsim
PARENTS=$OUT/parents

# Parents beyond data/sovsim (10 per scripted set, so that sl.effects prints an interval).
# KCPR-M runs of scripted/random that collapse in round 3: simulations 7, 11, 13, 16, 17, 19,
# 22 and 24 of sweep seed 1 (the first 8 of the 9 that collapse in round 3 among its
# simulations 0-29; `-S simulation=i` plays simulation i of the sweep alone, the same run).
for i in 7 11 13 16 17 19 22 24; do
  $LAB run sovsim -c kcpr_m -m scripted/random --seed 1 -n 1 -S simulation=$i --out $PARENTS --no-progress
done
# KCPR runs of a greedy king (scripted/greedy_leader: takes all it may) over scripted/random
# peasants, simulations 0-9 of sweep seed 0 (`sovsim-kcpr-mixed-9a3ff8de-s0-<i>`): the peasants'
# draws differ by simulation, so the 10 parents are 10 different games.
$LAB run sovsim -c kcpr -m scripted/random --seat king=scripted/greedy_leader --seed 0 -n 10 \
  --out $PARENTS --no-progress
# The sweep's seal (its tables, signed under this machine's key) is read nowhere else.
rm -f $PARENTS/.scarce_lab_seal

# The king's misreport removed at the round before the collapse: 10 KCPR-M parents of
# scripted/random that collapse in round 3 (data/sovsim s0-0 and s0-3, and the 8 above),
# forked at round 2. From round 2 on the king's announcement is the true pool; the `none`
# forks are the baseline.
for parent in data/sovsim/sovsim-kcpr_m-scripted-random-s0-{0,3} \
              $PARENTS/sovsim-kcpr_m-scripted-random-s1-{7,11,13,16,17,19,22,24}; do
  $LAB fork "$parent" --at round=2 --intervene none --seeds 0..2 --out $OUT/misreport
  $LAB fork "$parent" --at round=2 --intervene rule:setting=misreport,value=false \
    --seeds 0..2 --out $OUT/misreport
done

# A greedy king swapped for a sustainable one: the 10 KCPR parents above (greedy king, random
# peasants), which all collapse in round 1, so the swap is at round 1 (k = 1: no prefix).
# Seeds 0-1: the random peasants play on, so seed 1 (re-seeded from round 1) is another game.
for i in 0 1 2 3 4 5 6 7 8 9; do
  parent=$PARENTS/sovsim-kcpr-mixed-9a3ff8de-s0-$i
  $LAB fork "$parent" --at round=1 --intervene none --seeds 0..1 --out $OUT/king
  $LAB fork "$parent" --at round=1 --intervene seat_model:seat=king,model=scripted/sustainable \
    --seeds 0..1 --out $OUT/king
done

# The misreport off with a model: the shipped KCPR-M run of the embedded model
# (embedded/smollm2, seed 0; collapses in round 4), forked at round 3, seeds 0-1. The
# prefix's 10 calls are replayed from the parent's llm_calls.jsonl; the rest are live
# (about 2 minutes a fork on 2 busy cores).
parent=data/sovsim/sovsim-kcpr_m-embedded-smollm2-s0-0
$LAB fork "$parent" --at round=3 --intervene none --seeds 0..1 --out $OUT/embedded
$LAB fork "$parent" --at round=3 --intervene rule:setting=misreport,value=false --seeds 0..1 --out $OUT/embedded
