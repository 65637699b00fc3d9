#!/usr/bin/env bash
# Rebuild the SCARCE forks under data/forks/scarce (see README.md in this folder).
# Usage: bash data/forks/scarce/make_data.sh   (from the repository root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
# Complete runs and forks are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
OUT=data/forks/scarce
PARENTS=$OUT/parents

# Parents beyond the shipped studies (10 per set, so that sl.effects prints an interval): more
# seeds of the same study profiles, the same configs (run ids end in the same config hash).
# scarce-institutions, arm none (every institution off): seeds 4-9 (the shipped runs are 0-3).
$LAB study run scarce-institutions --profile shipped-scripted --arm none \
  --seed 4 --seed 5 --seed 6 --seed 7 --seed 8 --seed 9 --out $PARENTS/sanctions --no-progress
# models-tactics, the strategic negotiators: seeds 3-7, 10, 11 and 13 (the shipped runs are 0-1),
# the seeds among 2-13 in which w2 sends a private message in contention 1 (the message fork
# needs one there; in seeds 2, 8, 9 and 12 it sends none).
$LAB study run models-tactics --profile shipped-scripted --model scripted/skilled:0.5 \
  --role negotiator_model=scripted/strategic \
  --seed 3 --seed 4 --seed 5 --seed 6 --seed 7 --seed 10 --seed 11 --seed 13 --out $PARENTS/message --no-progress

# Sanctions switched on mid-run: 10 `scarce-institutions` runs with every institution off
# (data/talk_institutions/scarce/scripted seeds 0-3, and seeds 4-9 above; 4 workers,
# scripted/skilled solvers, scripted/institution-mix negotiators); at contention 2 the
# mechanism starts fining broken promises; the `none` forks are the baseline. Seed 0 only
# (the parent's own continuation): a SCARCE fork is about 170 kB.
cfg=scarce_ballots_fixed_mem-cross_scripted-skilled
for parent in data/talk_institutions/scarce/scripted/${cfg}_s{0,1,2,3}_d6f4fbf1 \
              $PARENTS/sanctions/${cfg}_s{4,5,6,7,8,9}_d6f4fbf1; do
  $LAB fork "$parent" --at contention=2 --intervene none --seeds 0 --out $OUT/sanctions
  $LAB fork "$parent" --at contention=2 --intervene rule:setting=institutions.sanctions,value=mechanism \
    --seeds 0 --out $OUT/sanctions
done

# One negotiator's first private message replaced: 10 strategic runs of models-tactics
# (data/scarce/scripted/models seeds 0-1, and the 8 seeds above); w2's first private message
# of contention 1 (an [ask-return] request or a [return] offer) becomes a message with no
# request or offer; the recipient is kept. Seed 0 only.
for parent in data/scarce/scripted/models/${cfg}-0.5_s{0,1}_bcdc65d3 \
              $PARENTS/message/${cfg}-0.5_s{3,4,5,6,7,10,11,13}_bcdc65d3; do
  $LAB fork "$parent" --at contention=1 --intervene none --seeds 0 --out $OUT/message
  $LAB fork "$parent" --at contention=1 --intervene "replace_message:agent=w2,text=Good luck with your task." \
    --seeds 0 --out $OUT/message
done
