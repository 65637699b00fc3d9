#!/usr/bin/env bash
# Rebuild the talk-and-institutions datasets under data/talk_institutions (see README.md).
# Usage: bash data/talk_institutions/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
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
  # SCARCE institutions, with deadlines that bind: 4 workers, one subrun, a 10-minute
  # deadline (4 minutes: nearly every worker missed under every arm, scores near 0; 10: half
  # to three quarters missed, so arms can differ), `scripted/skilled` solvers (an attempt finds the missing insight with
  # probability 0.5; 1-3 insights needed per task) and the `scripted/institution-mix`
  # negotiators (w0 and w3 promise-breakers, w1 sanctioner, w2 contractor). Each module on
  # its own and all off (the ablation), and the centralised FIFO scheduler as the baseline;
  # interviews on. 4 seeds per arm: the tables' intervals over runs need 2 runs
  # (`stats.cluster_mean_ci`, `bounded_mean_ci`), and 4 keep the folder near 5 MB (a run is ~160 kB).
  S="--workers 4 --subruns 1 --deadline-min 10 --model scripted/skilled --negotiator-model scripted/institution-mix --interviews"
  for seed in 0 1 2 3; do
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
