#!/usr/bin/env bash
# Rebuild the SCARCE forks under data/forks/scarce (see README.md in this folder).
# Usage: bash data/forks/scarce/make_data.sh   (from the repository root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
# Complete forks are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
OUT=data/forks/scarce

# Sanctions switched on mid-run: the parents are the shipped `scarce-institutions` runs with
# every institution off (data/talk_institutions/scarce/scripted, seeds 0-3; 4 workers,
# scripted/skilled solvers, scripted/institution-mix negotiators); at contention 2 the
# mechanism starts fining broken promises; the `none` forks are the baseline.
for s in 0 1 2 3; do
  parent=data/talk_institutions/scarce/scripted/scarce_ballots_fixed_mem-cross_scripted-skilled_s${s}_d6f4fbf1
  $LAB fork "$parent" --at contention=2 --intervene none --seeds 0..2 --out $OUT/sanctions
  $LAB fork "$parent" --at contention=2 --intervene rule:setting=institutions.sanctions,value=mechanism \
    --seeds 0..2 --out $OUT/sanctions
done

# One negotiator's first private message replaced: the parents are the shipped strategic runs
# of models-tactics (data/scarce/scripted/models, seeds 0-1); w2's first private message (its
# [ask-return] request in contention 1) becomes a message with no request.
for s in 0 1; do
  parent=data/scarce/scripted/models/scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s${s}_bcdc65d3
  $LAB fork "$parent" --at contention=1 --intervene none --seeds 0..3 --out $OUT/message
  $LAB fork "$parent" --at contention=1 --intervene "replace_message:agent=w2,text=Good luck with your task." \
    --seeds 0..3 --out $OUT/message
done
