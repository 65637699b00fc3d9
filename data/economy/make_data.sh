#!/usr/bin/env bash
# Rebuild the Economy of Minds datasets under data/economy (see README.md in this folder).
# Usage: bash data/economy/make_data.sh [blocksworld|arithmetic|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv).
# Each dataset is a profile of the study economy-ablations (scarce_lab/environments/economy/studies.toml;
# `scarce-lab study show economy-ablations` prints it); complete runs are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
what="${1:-all}"

if [[ $what == blocksworld || $what == all ]]; then
  # Blocks World, 12 scripted random-rule founders, 150 + 40 episodes, seeds 0-4: the economy with the
  # paper's defaults (fixed bids b_a, bankrupt agents replaced by repaired copies, one newcomer every 2
  # episodes as well), every ablation, the Holland wealth-proportional bid (an option), and two baselines
  # (random founders in a fixed order without an economy; the expert rule set, 5 agents: a ceiling),
  # whose 10 training episodes precede their 40 frozen ones
  $LAB study run economy-ablations --profile shipped-scripted --no-progress
fi

if [[ $what == arithmetic || $what == all ]]; then     # the embedded model: a plumbing check
  $LAB study run economy-ablations --profile shipped-embedded --no-progress
fi
