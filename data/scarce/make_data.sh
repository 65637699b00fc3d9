#!/usr/bin/env bash
# Rebuild the SCARCE datasets under data/scarce (see README.md in this folder).
# Usage: bash data/scarce/make_data.sh [scripted|embedded|labels|all|embedded_negotiators|labels_negotiators]
#        (from the repo root; `all` rebuilds scripted, embedded and its labels)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=".venv/bin/scarce-lab run scarce"
OUT=data/scarce
SEEDS="--seed 0 --seed 1 --seed 2 --seed 3"
# scripted negotiators AND scripted solver: 4 workers, 1 subrun, 3-minute deadline
S="--workers 4 --subruns 1 --deadline-min 3"
what="${1:-all}"

if [[ $what == scripted || $what == all ]]; then
  for pol in fifo sjf edf bid-first random; do            # 02, 06: per-policy behaviour under ballots
    $RUN $S --model scripted/$pol $SEEDS --out $OUT/scripted/models
  done
  for sch in fifo sjf edf highest-bid; do                  # 06: centralised schedulers, same tasks+seeds
    $RUN $S --model scripted/random --scheduler $sch $SEEDS --out $OUT/scripted/schedulers
  done
  for pol in edf bid-first random; do                      # 04: one richer worker (w0: 3000 credits)
    $RUN $S --model scripted/$pol --rich-worker-budget 3000 $SEEDS --out $OUT/scripted/budget
  done
  for pol in edf random; do                                # 04: mixed 10..25 min deadlines
    $RUN --workers 4 --subruns 1 --model scripted/$pol --mixed-deadlines $SEEDS --out $OUT/scripted/deadlines
  done
  $RUN $S --model scripted/random --mechanism revisable $SEEDS --out $OUT/scripted/revisable  # 05
fi

# embedded model as solver AND negotiator (issue 15): 2 workers, 1 subrun, tasks rev and tac, default
# steps and deadline: the reference (seeds 0-4; the runs of benchmarks/bench_scarce.py --only-embedded),
# revisable bids, no memory, cross memory (2 subruns), reasoning effort low/high, 3 workers (and one richer
# worker). Each config in make_embedded.py is written as its `scarce-lab run scarce` command.
if [[ $what == embedded || $what == all ]]; then
  .venv/bin/python data/scarce/make_embedded.py
fi

# embedded model as negotiator, the scripted fifo solver doing the programming (made 2026-11-30;
# re-running writes new run ids, see the card)
if [[ $what == embedded_negotiators ]]; then
  .venv/bin/python data/scarce/make_embedded_negotiators.py
fi

if [[ $what == labels || $what == all ]]; then             # judge panel: 3 x embedded (seeds/variants)
  .venv/bin/scarce-lab judge label $OUT/embedded --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out $OUT/labels/embedded --no-progress
fi
if [[ $what == labels_negotiators ]]; then
  .venv/bin/scarce-lab judge label $OUT/embedded_negotiators --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out $OUT/labels/embedded_negotiators --no-progress
fi
