#!/usr/bin/env bash
# Rebuild the cross-play sets under data/crossplay (see README.md in this folder).
# Usage: bash data/crossplay/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv). The embedded part
# uses a fresh response cache per environment so that its cache hits are the grid's own.
# Each grid is a profile of a declared study (sovsim-crossplay, scarce-crossplay: the profile's
# populations cross its runs; `scarce-lab study show NAME` prints it); complete runs are skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
what="${1:-all}"

if [[ $what == scripted || $what == all ]]; then
  # SovSim: greedy / sustainable / random leaders x the same three as background, kcpr and bcpr, 5 simulations
  $LAB study run sovsim-crossplay --profile shipped-scripted --no-progress
  # SCARCE: strategic / fifo negotiator at w0 x the same two as background (solvers: skilled 0.5), 5 seeds.
  # The fifo-vs-fifo composition changes no worker's play, so it is now planned as the plain fifo run
  # (no seats, another run id); the shipped folder holds it as recorded before that rule (see README.md).
  $LAB study run scarce-crossplay --profile shipped-scripted --no-progress
fi

if [[ $what == embedded || $what == all ]]; then
  # SovSim, 6-round kcpr games: an embedded king over greedy / sustainable peasants, and the reverse
  SCARCE_LAB_CACHE_DIR="${TMPDIR:-/tmp}/crossplay_cache_sovsim" \
    $LAB study run sovsim-crossplay --profile shipped-embedded --no-progress
  # SCARCE, 3 workers, one private round: an embedded negotiator at w0 over strategic / fifo negotiators
  SCARCE_LAB_CACHE_DIR="${TMPDIR:-/tmp}/crossplay_cache_scarce" \
    $LAB study run scarce-crossplay --profile shipped-embedded --no-progress
fi
