#!/usr/bin/env bash
# Rebuild the Economy of Minds datasets under data/economy (see README.md in this folder).
# Usage: bash data/economy/make_data.sh [blocksworld|arithmetic|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
RUN="$LAB run economy"
SEEDS="--seed 0 --seed 1 --seed 2 --seed 3 --seed 4"
OUT=data/economy
what="${1:-all}"

if [[ $what == blocksworld || $what == all ]]; then
  # the economy with the paper's defaults (fixed bids b_a, bankrupt agents replaced by repaired
  # copies, one newcomer every 2 episodes as well) and every ablation
  $RUN --task blocksworld --agents 12 --episodes 150 --eval-episodes 40 -a all $SEEDS \
    --model scripted/random-rules --out $OUT/blocksworld --detail episodes --snapshot-every 10
  # the Holland wealth-proportional bid (an option), full economy only
  $RUN --task blocksworld --agents 12 --episodes 150 --eval-episodes 40 $SEEDS -S economy.bid_scheme=holland \
    --model scripted/random-rules --out $OUT/blocksworld --detail episodes --snapshot-every 10
  # baselines: random founders in a fixed order without an economy; the expert rule set (a ceiling)
  $RUN --task blocksworld --agents 12 --episodes 10 --eval-episodes 40 --baseline round-robin $SEEDS \
    --out $OUT/blocksworld --detail episodes --snapshot-every 10
  $RUN --task blocksworld --agents 5 --episodes 10 --eval-episodes 40 --baseline full $SEEDS \
    --out $OUT/blocksworld --detail episodes --snapshot-every 10
fi

if [[ $what == arithmetic || $what == all ]]; then     # the embedded model: a plumbing check
  $RUN --task arithmetic --model embedded/smollm2 --agents 4 --episodes 4 --eval-episodes 2 --qa-max-steps 4 \
    --seed 0 --out $OUT/arithmetic -S economy.explore_interval=2
fi
