#!/usr/bin/env bash
# Rebuild the talk-and-institutions datasets under data/talk_institutions (see README.md).
# Usage: bash data/talk_institutions/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
OUT=data/talk_institutions
what="${1:-all}"

if [[ $what == scripted || $what == all ]]; then
  # SovSim talk: a promise-and-defect policy and a sustainable-quota policy, public and
  # public+private talk, and the paper's no-talk game as the ablation; interviews on.
  for pol in promise_defector quota_keeper; do
    for talk in none public public+private; do
      $LAB run sovsim -m scripted/$pol -c cpr --talk $talk --interviews -n 3 --no-progress -o $OUT/sovsim/scripted_talk
    done
  done
  # SovSim KCPR-M: a king who understates the pool and one who tells the truth; interviews on.
  for pol in greedy_leader sustainable; do
    $LAB run sovsim -m scripted/$pol -c kcpr_m --interviews -n 3 --no-progress -o $OUT/sovsim/scripted_kcpr_m
  done
  # SCARCE institutions: the promise-breaker / sanctioner / contractor mix, 3 workers, one
  # subrun, each module on its own and all off (the ablation), and the FIFO scheduler as the
  # centralised baseline; interviews on.
  S="--workers 3 --subruns 1 --model scripted/fifo --negotiator-model scripted/institution-mix --interviews"
  for seed in 0 1 2; do
    $LAB run scarce $S --seed $seed -o $OUT/scarce/scripted
    $LAB run scarce $S --seed $seed -S institutions.sanctions=mechanism -o $OUT/scarce/scripted
    $LAB run scarce $S --seed $seed -S institutions.sanctions=vote -S institutions.fine_to=harmed -o $OUT/scarce/scripted
    $LAB run scarce $S --seed $seed -S institutions.reputation=true -o $OUT/scarce/scripted
    $LAB run scarce $S --seed $seed -S institutions.contracts=true -o $OUT/scarce/scripted
    $LAB run scarce $S --seed $seed --scheduler fifo -o $OUT/scarce/scripted
  done
fi

if [[ $what == embedded || $what == all ]]; then
  # The embedded model (SmolLM2-135M, offline), interviews on: one short KCPR-M game and
  # one short CPR game with public talk. On the shared 2-core machine these were made on,
  # a call took 1-4 minutes (other jobs held the cores), so the games are 3 and 2 rounds.
  $LAB run sovsim -m embedded/smollm2 -c kcpr_m --rounds 3 --interviews -n 1 --no-progress -o $OUT/sovsim/embedded &
  $LAB run sovsim -m embedded/smollm2 -c cpr --rounds 2 --talk public --interviews -n 1 --no-progress -o $OUT/sovsim/embedded &
  wait
fi
