#!/usr/bin/env bash
# Rebuild the talk-and-institutions datasets under data/talk_institutions (see README.md).
# Usage: bash data/talk_institutions/make_data.sh [scripted|embedded|all]   (from the repo root)
# SCARCE_LAB overrides the command (default: the repository's .venv), e.g.
# SCARCE_LAB="env PYTHONPATH=$PWD /path/to/python -m scarce_lab".
# Each dataset is a profile of a declared study (sovsim-talk, sovsim-misreport, scarce-institutions,
# sovsim-institutions;
# `scarce-lab study show NAME` prints it); complete runs are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
what="${1:-all}"

if [[ $what == scripted || $what == all ]]; then
  # SovSim talk: a promise-and-defect policy and a sustainable-quota policy, public and
  # public+private talk, and the paper's no-talk game as the ablation; interviews on; 3 simulations.
  $LAB study run sovsim-talk --profile shipped-scripted --no-progress
  # SovSim KCPR-M: a king who understates the pool and one who tells the truth; interviews on.
  $LAB study run sovsim-misreport --profile shipped-scripted --no-progress
  # SCARCE institutions, with deadlines that bind: 4 workers, one subrun, a 10-minute
  # deadline (4 minutes: nearly every worker missed under every arm, scores near 0; 10: half
  # to three quarters missed, so arms can differ), `scripted/skilled` solvers (an attempt finds the missing insight with
  # probability 0.5; 1-3 insights needed per task) and the `scripted/institution-mix`
  # negotiators (w0 and w3 promise-breakers, w1 sanctioner, w2 contractor). Each module on
  # its own and all off (the ablation), and the centralised FIFO scheduler as the baseline;
  # interviews on. 4 seeds per arm: the tables' intervals over runs need 2 runs
  # (`stats.cluster_mean_ci`, `bounded_mean_ci`), and 4 keep the folder near 5 MB (a run is ~160 kB).
  $LAB study run scarce-institutions --profile shipped-scripted --no-progress
  # SovSim institutions (peer sanctions, a quota vote, leader elections): cpr and bcpr, each
  # institution alone, all on and each ablated from all, and none (the paper's game); a mixed
  # scripted population (a0 random, a1 opportunist, a2 conditional, a3 greedy_leader); 5 simulations.
  $LAB study run sovsim-institutions --profile shipped-scripted --no-progress
  rm -f data/talk_institutions/sovsim_institutions/study.json
fi

if [[ $what == embedded || $what == all ]]; then
  # The embedded model (SmolLM2-135M, offline), interviews on: one short KCPR-M game and
  # one short CPR game with public talk. On the shared 2-core machine these were made on,
  # a call took 1-4 minutes (other jobs held the cores), so the games are 3 and 2 rounds.
  # Both studies write into one folder: a study run's state file (study.json) names one study
  # and a second is refused there, so they run one after the other, each state dropped after it
  # (complete runs are found by their folders, which is what a re-run skips).
  for study in sovsim-misreport sovsim-talk; do
    $LAB study run $study --profile shipped-embedded --no-progress
    rm -f $OUT/sovsim/embedded/study.json
  done
fi
