#!/usr/bin/env bash
# Rebuild the cross-play sets under data/crossplay (see README.md in this folder).
# Usage: bash data/crossplay/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv). The embedded part
# uses a fresh response cache per environment so that its cache hits are the grid's own.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
what="${1:-all}"
SC="--workers 4 --model scripted/skilled:0.5 --negotiator-model scripted/fifo --deadline-min 15 --output-limit 100 --subruns 1"

if [[ $what == scripted || $what == all ]]; then
  # SovSim: greedy / sustainable / random leaders x the same three as background, kcpr and bcpr, 5 simulations
  $LAB run sovsim --population scripted/greedy,scripted/sustainable,scripted/random --focal-seats leader \
      -c kcpr -c bcpr -n 5 --seed 0 --no-progress --out data/crossplay/sovsim/scripted
  # SCARCE: strategic / fifo negotiator at w0 x the same two as background (solvers: skilled 0.5), 5 seeds
  $LAB run scarce $SC --population scripted/strategic,scripted/fifo --seat-part negotiator --focal-seats 1 \
      --seed 0 --seed 1 --seed 2 --seed 3 --seed 4 --out data/crossplay/scarce/scripted
fi

if [[ $what == embedded || $what == all ]]; then
  # SovSim, 6-round kcpr games: an embedded king over greedy / sustainable peasants, and the reverse
  export SCARCE_LAB_CACHE_DIR="${TMPDIR:-/tmp}/crossplay_cache_sovsim"
  E="-c kcpr -n 1 --seed 0 -S game.rounds=6 --concurrency 1 --timeout 3600 --no-progress --out data/crossplay/sovsim/embedded"
  $LAB run sovsim --population embedded/smollm2 --background scripted/greedy,scripted/sustainable --focal-seats king $E
  $LAB run sovsim --population scripted/greedy,scripted/sustainable --background embedded/smollm2 --focal-seats king $E
  # SCARCE, 3 workers, one private round: an embedded negotiator at w0 over strategic / fifo negotiators
  export SCARCE_LAB_CACHE_DIR="${TMPDIR:-/tmp}/crossplay_cache_scarce"
  $LAB run scarce --workers 3 --model scripted/skilled:0.5 --negotiator-model scripted/fifo --deadline-min 15 \
      --output-limit 100 --subruns 1 --private-rounds 1 --population embedded/smollm2 \
      --background scripted/strategic,scripted/fifo --seat-part negotiator --focal-seats 1 --seed 0 \
      --out data/crossplay/scarce/embedded
fi
