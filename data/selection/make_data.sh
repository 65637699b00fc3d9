#!/usr/bin/env bash
# Rebuild the selection chains under data/selection (see README.md in this folder).
# Usage: bash data/selection/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv). A rerun resumes each
# chain where it stopped; a finished selection runs nothing. The embedded part uses a fresh
# response cache, so that its cache hits are the chains' own.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
what="${1:-all}"
D=data/selection

if [[ $what == scripted || $what == all ]]; then
  # SovSim cpr (no leader: every seat plays the same game), 12 rounds: greedy / sustainable / random,
  # 8 chains x 6 generations under each rule
  $LAB select sovsim --population scripted/greedy,scripted/sustainable,scripted/random \
    --generations 6 --chains 8 --rule replicator -c cpr --out $D/sovsim/scripted-replicator
  $LAB select sovsim --population scripted/greedy,scripted/sustainable,scripted/random \
    --generations 6 --chains 8 --rule eom --initial-wealth 20 -c cpr --out $D/sovsim/scripted-eom
  # SCARCE: the population plays the negotiators of 3 workers (solvers scripted/skilled:0.5), 2 chains x 5 generations
  $LAB select scarce --population scripted/strategic,scripted/fifo --seat-part negotiator \
    --generations 5 --chains 2 --rule replicator -m scripted/skilled:0.5 -S negotiator_model=scripted/fifo \
    -S memory=cross -S workers=3 -S deadline_min=15 -S output_limit=100 -S subruns=1 \
    --out $D/scarce/scripted-replicator
fi

if [[ $what == embedded || $what == all ]]; then
  # SovSim cpr, 6 rounds: the embedded model against greedy and sustainable policies, 3 chains x 5 generations
  SCARCE_LAB_CACHE_DIR="${TMPDIR:-/tmp}/selection_cache_sovsim" \
    $LAB select sovsim --population embedded/smollm2,scripted/greedy,scripted/sustainable \
    --generations 5 --chains 3 --rule replicator -c cpr -S game.rounds=6 --out $D/sovsim/embedded-replicator
fi
