#!/usr/bin/env bash
# Walk `gpuopt demo` in tmux as a new user would, from the first screen to an exported
# decision record, and say how long it took. Keys in (send-keys), screens out
# (capture-pane -p). At least one action of every step goes through the command palette
# (ctrl+p, a few words, enter); the rest are the keys the footer and the "Next:" line name.
#
#   scripts/tmux_demo.sh              # the demo's own settings (a few minutes on a CPU)
#   FAST=1 scripts/tmux_demo.sh       # a 12-run baseline and a 6-12 block round
#   OUT=dir scripts/tmux_demo.sh      # also keep every screen as dir/NN-name.txt
#
# Needs tmux and torch (the demo is a PyTorch softmax). Runs from the repository root with
# its own ledger and demo repository under a temporary folder; prints "tmux demo: ok" and
# the time from `gpuopt demo` to the exported record.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "tmux is missing: apt-get install -y tmux" >&2; exit 2; }
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
TMP=$(mktemp -d)
SESSION="gpuopt-demo-$$"
OUT=${OUT:-}
[ -n "$OUT" ] && mkdir -p "$OUT"
N=0
cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

shot() {  # shot NAME: print the screen (and keep it under $OUT)
  N=$((N + 1))
  local name; name=$(printf "%02d-%s" "$N" "$1")
  echo "===== $name"
  tmux capture-pane -p -t "$SESSION" | tee ${OUT:+"$OUT/$name.txt"}
}
wait_for() {  # wait_for TEXT [SECONDS]: until the screen shows TEXT
  local deadline=$((SECONDS + ${2:-60}))
  until tmux capture-pane -p -t "$SESSION" | grep -qF -- "$1"; do
    if ((SECONDS > deadline)); then echo "!! timed out waiting for: $1" >&2; shot timeout; exit 1; fi
    sleep 0.5
  done
}
keys() { tmux send-keys -t "$SESSION" "$@"; sleep 0.6; }
type_text() { tmux send-keys -t "$SESSION" -l "$1"; sleep 0.5; }
palette() {  # palette WORDS: run the palette's best match for WORDS
  keys C-p
  wait_for "Search for commands" 10
  sleep 0.5
  type_text "$1"
  sleep 1.0
  keys Enter
}
step() {  # step N TITLE [TEXT]: go to step N by its key; wait for its body (TEXT) too
  keys "$1"; wait_for "─ $1 $2 " 30
  if [ -n "${3:-}" ]; then wait_for "$3" 30; fi
  sleep 1
}
set_field() {  # set_field VALUE: replace the focused input's text
  keys Home; keys C-k; type_text "$1"
}
close_if_open() {  # close_if_open TEXT: a form still showing TEXT (refused) is cancelled
  if tmux capture-pane -p -t "$SESSION" | grep -qF -- "$1"; then shot refused; keys Escape; fi
}

START=$SECONDS
tmux new-session -d -s "$SESSION" -x 120 -y 40 \
  "PYTHONPATH=. TERM=xterm-256color $PY -m tui --ledger $TMP/ledger.db demo --dir $TMP/demo-repo; echo EXITED \$?; sleep 30"
wait_for "Next:" 120
shot opened

# 1 Contract: the demo's contract is ready; save it as it is (palette).
step 1 Contract
palette "Save the contract"
wait_for "saved" 20
shot contract

# 2 Baseline: record it (palette); FAST=1 asks for fewer runs first.
step 2 Baseline "Runs per workload"
if [ -n "${FAST:-}" ]; then
  keys Tab
  set_field 12
  keys Escape
fi
palette "Record the baseline"
wait_for "run " 120
shot baseline-running
wait_for "Baseline ID" 1800
shot baseline-recorded

# 3 Preflight: answer the first question and save (palette).
step 3 Preflight "what you know"
keys Tab; keys Tab; keys Tab
type_text "input and output live for the whole call"
keys Escape
palette "Save the preflight answers"
wait_for "saved 1 answer" 20
shot preflight

# 4 Hypotheses: one is written already; add evidence to it (palette).
step 4 Hypotheses "New hypothesis"
palette "Add evidence"
wait_for "Add evidence" 20
keys Tab; keys Tab; keys Tab
type_text "the profile shows five kernels per row: max, sub, exp, sum, div"
keys C-s
wait_for "evidence added" 20
shot hypotheses

# 5 Round: add the three branches from the list (palette for the first), then run it.
step 5 Round "Min blocks"
for ref in fused no-max same; do
  if [ "$ref" = fused ]; then palette "Add a variant"; else keys a; fi
  wait_for "Add a variant" 20
  keys Enter                     # open the list of branches and tags
  type_text "$ref"               # type to find it
  keys Enter
  keys C-s
  wait_for "variant $ref added" 60
done
shot variants
if [ -n "${FAST:-}" ]; then
  keys Tab; keys Tab; set_field 6; keys Tab; set_field 12; keys Escape
fi
palette "Run a round"
wait_for "block " 120
shot round-running
wait_for "─ 6 Results " 3600
shot results

# 6 Results: confirm each residual the app suggests (palette for the first).
palette "Confirm the residual"
wait_for "How the outcome differs" 20
keys C-s
sleep 1
close_if_open "How the outcome differs"
for _ in 1 2; do
  keys c; sleep 1; keys C-s; sleep 1; close_if_open "How the outcome differs"
done
shot residuals

# 7 Disposition: decide the selected variant (palette); a refusal is read and left.
step 7 Disposition
palette "decide selected"
wait_for "Decide" 20
shot decide-form
keys C-s
sleep 1
close_if_open "Refused"

# 8 Record: export it (palette).
step 8 Record
palette "export record"
wait_for "Record written" 30
ELAPSED=$((SECONDS - START))
shot exported

keys "?"
wait_for "Keys" 10
shot help
keys Escape
keys Escape                      # back to the session list
wait_for "Pick a session" 20
shot session-list
keys C-q
wait_for "EXITED 0" 20
echo "tmux demo: ok; from gpuopt demo to the exported record: $((ELAPSED / 60)) min $((ELAPSED % 60)) s"
