#!/usr/bin/env bash
# Rebuild the SCARCE datasets under data/scarce (see README.md in this folder).
# Usage: bash data/scarce/make_data.sh [scripted|embedded|labels|all|embedded_negotiators|labels_negotiators|ground_truth]
#        (from the repo root; `all` rebuilds scripted, embedded and its labels)
# SCARCE_LAB / PYTHON override the commands (default: the repository's .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
PY="${PYTHON:-.venv/bin/python}"
RUN="$LAB run scarce"
OUT=data/scarce/scripted
SEEDS2="--seed 0 --seed 1"
SEEDS3="--seed 0 --seed 1 --seed 2"
# Every scripted run: 4 workers, the skilled scripted solver (stochastic progress, several
# slots; skill 0.5), 15-minute deadline, 1000 credits, the paper's defaults otherwise
# (cross-subrun memory, two private-message rounds, fixed bids); command output kept to 100 characters.
S="--workers 4 --model scripted/skilled:0.5 --deadline-min 15 --output-limit 100"
what="${1:-all}"

if [[ $what == scripted || $what == all ]]; then
  for pol in fifo sjf edf bid-first random spend-down urgency reciprocal coalition strategic; do  # 02, 06
    $RUN $S --subruns 1 --negotiator-model scripted/$pol $SEEDS2 --out $OUT/models
  done
  for mem in none subrun cross; do                         # 03, 06: memory horizon (cross = the paper's)
    $RUN $S --subruns 2 --negotiator-model scripted/strategic --memory $mem $SEEDS2 --out $OUT/memory
  done
  for sch in fifo sjf edf highest-bid; do                  # 06: centralised schedulers; ballots = models/strategic
    $RUN $S --subruns 1 --negotiator-model scripted/strategic --scheduler $sch $SEEDS2 --out $OUT/schedulers
  done
  for pol in spend-down strategic bid-first; do            # 04: one richer worker (the paper's 1500 vs 1000)
    $RUN $S --subruns 1 --negotiator-model scripted/$pol --rich-worker-budget 1500 $SEEDS3 --out $OUT/budget
  done
  for pol in urgency strategic edf; do                     # 04: mixed 10..25-minute deadlines
    $RUN $S --subruns 1 --negotiator-model scripted/$pol --mixed-deadlines $SEEDS3 --out $OUT/deadlines
  done
  for pol in spend-down strategic random; do               # 05: revisable bids (fixed counterparts: models)
    $RUN $S --subruns 1 --negotiator-model scripted/$pol --mechanism revisable $SEEDS2 --out $OUT/revisable
  done
fi

# embedded model as solver AND negotiator (issue 15): 2 workers, 1 subrun, tasks rev and tac, default
# steps and deadline: the reference (seeds 0-4; the runs of benchmarks/bench_scarce.py --only-embedded),
# revisable bids, no memory, cross memory (2 subruns), reasoning effort low/high, 3 workers (and one richer
# worker). Each config in make_embedded.py is written as its `scarce-lab run scarce` command.
if [[ $what == embedded || $what == all ]]; then
  $PY data/scarce/make_embedded.py
fi

# embedded model as negotiator, the old oracle scripted solver (scripted/fifo) programming: runs made
# before the paper's defaults were adopted, so make_embedded_negotiators.py pins their settings
# (subrun memory, one private round); re-running writes new run ids, see the card
if [[ $what == embedded_negotiators ]]; then
  $PY data/scarce/make_embedded_negotiators.py
fi

if [[ $what == labels || $what == all ]]; then             # judge panel: 3 x embedded (seeds/variants)
  $LAB judge label data/scarce/embedded --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out data/scarce/labels/embedded --no-progress
fi
if [[ $what == labels_negotiators ]]; then
  $LAB judge label data/scarce/embedded_negotiators --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out data/scarce/labels/embedded_negotiators --no-progress
fi

# judge panel against the scripted ground truth (issue 25): the four strategic scripted runs of seed 0 in
# scripted/models that record intended tactics (urgency, reciprocal, coalition, strategic), copied to a temporary
# folder (validate reads a folder of ground-truth runs only); a bounded sample of 12 units spread over the runs
# (--limit takes ceil(12/4) evenly spaced units per run). ~36 calls of the embedded model, ~20 min on 2 busy cores.
if [[ $what == ground_truth ]]; then
  tmp=$(mktemp -d)
  for r in 6e4fd5b8 afef7b7a bab90be2 bcdc65d3; do
    cp -r $OUT/models/scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s0_$r "$tmp/"
  done
  $LAB judge validate --data "$tmp" --taxonomy scarce --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 \
    --limit 12 --out data/scarce/labels/ground_truth --format json --no-progress --concurrency 2 \
    > data/scarce/labels/ground_truth/validation.json
  rm -rf "$tmp"
  # the same panel on the first 6 CaSiNo utterances of the shared validation split, for the comparison beside it
  $LAB judge validate --taxonomy casino --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --limit 6 \
    --out data/scarce/labels/casino_validation --format json --no-progress --concurrency 2 \
    > data/scarce/labels/casino_validation/validation.json
  rm -f data/scarce/labels/ground_truth/llm_calls.jsonl data/scarce/labels/casino_validation/llm_calls.jsonl
fi
