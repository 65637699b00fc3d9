#!/usr/bin/env bash
# Rebuild the SCARCE datasets under data/scarce (see README.md in this folder).
# Usage: bash data/scarce/make_data.sh [scripted|embedded|labels|all|embedded_negotiators|labels_negotiators|ground_truth|human_sheet]
#        (from the repo root; `all` rebuilds scripted, embedded and its labels)
# SCARCE_LAB / PYTHON override the commands (default: the repository's .venv).
# Each dataset is a profile of a declared study (scarce_lab/environments/scarce/studies.toml;
# `scarce-lab study show NAME` prints it): the profile names the models, settings, seeds and arms
# and writes to its folder; complete runs are skipped, so a re-run resumes.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB="${SCARCE_LAB:-.venv/bin/scarce-lab}"
PY="${PYTHON:-.venv/bin/python}"
STUDY="$LAB study run"
what="${1:-all}"
# A folder that holds runs of several studies: a study run's state file (OUT/study.json) names
# one study and profile, and a second study is refused there; so it is dropped after each run
# (complete runs are found by their folders, which is what a re-run skips).
shared() { local out=$1; shift; $STUDY "$@" --no-progress; rm -f "$out/study.json"; }

# Every scripted run: 4 workers, the skilled scripted solver (stochastic progress, several slots;
# skill 0.5), 15-minute deadline, 1000 credits, the paper's defaults otherwise (cross-subrun
# memory, two private-message rounds, fixed bids); command output kept to 100 characters.
if [[ $what == scripted || $what == all ]]; then
  $STUDY models-tactics --profile shipped-scripted --no-progress     # scripted/models: ten negotiator policies (02, 05, 06)
  $STUDY memory-horizon --profile shipped-scripted --no-progress     # scripted/memory: none / subrun / cross, 2 subruns (03, 06)
  $STUDY auction-dynamics --profile shipped-scripted --no-progress   # scripted/schedulers: fifo / sjf / edf / highest-bid (06)
  $STUDY budget-asymmetry --profile shipped-scripted --no-progress   # scripted/budget: one worker with 1500 credits (04)
  $STUDY deadline-pressure --profile shipped-scripted --no-progress  # scripted/deadlines: mixed 10-25 minute deadlines (04)
  $STUDY revisable-bids --profile shipped-scripted --no-progress     # scripted/revisable: revisable bids (05)
fi

# embedded model as solver AND negotiator: 2 workers, 1 subrun, tasks rev and tac, default steps and
# deadline: the reference (seeds 0-4; the runs of benchmarks/bench_scarce.py --only-embedded), revisable
# bids, no memory, cross memory (2 subruns), reasoning effort low/high, 3 workers (and one richer worker).
if [[ $what == embedded || $what == all ]]; then
  for study in models-tactics revisable-bids memory-horizon reasoning-effort budget-asymmetry; do
    shared data/scarce/embedded $study --profile shipped-embedded
  done
fi

# embedded model as negotiator, the old oracle scripted solver (scripted/fifo) programming: runs made
# before the paper's defaults were adopted, so make_embedded_negotiators.py pins their settings
# (subrun memory, one private round); the config has gained settings since, so re-running writes new
# run ids (no study profile can name the shipped ones; see the card)
if [[ $what == embedded_negotiators ]]; then
  $PY data/scarce/make_embedded_negotiators.py
fi

# judge panel over the whole embedded folder (runs of five studies): 3 x embedded (seeds/variants)
if [[ $what == labels || $what == all ]]; then
  $LAB judge label data/scarce/embedded --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out data/scarce/labels/embedded --no-progress
fi
# the blank label sheet of the same 28 units for human coders (CSV, codebook, manifest); no human labels are shipped
if [[ $what == human_sheet || $what == labels || $what == all ]]; then
  $LAB judge export-sheet data/scarce/embedded --taxonomy scarce --out data/scarce/labels/human_sheet/embedded.csv --force
fi
if [[ $what == labels_negotiators ]]; then
  $LAB judge label data/scarce/embedded_negotiators --taxonomy scarce \
    --judges embedded/smollm2,embedded/smollm2,embedded/smollm2 --out data/scarce/labels/embedded_negotiators --no-progress
fi

# judge panel against the scripted ground truth: the four strategic scripted runs of seed 0 in
# scripted/models that record intended tactics (urgency, reciprocal, coalition, strategic), copied to a temporary
# folder (validate reads a folder of ground-truth runs only); a bounded sample of 12 units spread over the runs
# (--limit takes ceil(12/4) evenly spaced units per run). ~36 calls of the embedded model, ~20 min on 2 busy cores.
if [[ $what == ground_truth ]]; then
  tmp=$(mktemp -d)
  for r in 6e4fd5b8 afef7b7a bab90be2 bcdc65d3; do
    cp -r data/scarce/scripted/models/scarce_ballots_fixed_mem-cross_scripted-skilled-0.5_s0_$r "$tmp/"
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
