#!/usr/bin/env bash
# Drive `gpuopt demo` in tmux as a person would: keys in, screens out (capture-pane -p).
#
#   scripts/tmux_demo.sh            # open the demo, walk the steps, start and stop a baseline,
#                                   # write a hypothesis, add a variant, help, quit
#   FULL=1 scripts/tmux_demo.sh     # also record the baseline, run a round, decide, export
#
# Screens go to stdout (and to $OUT/NN-name.txt when OUT is set). Needs tmux
# (apt-get install -y tmux). Runs from the repository root with its own ledger and demo
# directory under a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "tmux is missing: apt-get install -y tmux" >&2; exit 2; }
PY=${PYTHON:-/work/venv/bin/python}
[ -x "$PY" ] || PY=python3
TMP=$(mktemp -d)
SESSION="gpuopt-demo-$$"
OUT=${OUT:-}
[ -n "$OUT" ] && mkdir -p "$OUT"
N=0
cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

shot() {  # shot NAME: print the screen
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
type_text() { tmux send-keys -t "$SESSION" -l "$1"; sleep 0.4; }

tmux new-session -d -s "$SESSION" -x 120 -y 40 \
  "PYTHONPATH=. TERM=xterm-256color $PY -m tui --ledger $TMP/ledger.db demo --dir $TMP/demo-repo; echo EXITED \$?; sleep 30"
wait_for "Baseline" 90
wait_for "Next:" 30
shot opened

TITLES=(x Contract Baseline Preflight Hypotheses Round Results Disposition Record)
for k in 1 3 4 5 6 7 8 2; do keys "$k"; wait_for "─ $k ${TITLES[$k]} " 30; done
shot baseline-step

keys r
wait_for "runs " 60
sleep 2
shot baseline-running
if [ -z "${FULL:-}" ]; then
  keys s
  wait_for "record it again" 300
  shot baseline-stopped
fi
if [ -n "${FULL:-}" ]; then
  wait_for "Baseline ID" 900
  shot baseline-recorded
fi

keys 4
wait_for "─ 4 Hypotheses " 30
keys w
type_text "One fused softmax call instead of four passes"
keys Tab
type_text "the row is read by five passes"
keys C-s
wait_for "saved" 20
shot hypothesis-saved

keys Escape
keys 5
wait_for "─ 5 Round " 30
keys a
wait_for "Add a variant" 20
type_text "fused"
keys Tab
type_text "fused"
keys C-s
wait_for "fused" 30
sleep 1
shot variant-added

if [ -n "${FULL:-}" ]; then
  for name in no-max same; do
    keys a; wait_for "Add a variant" 20
    type_text "$name"; keys Tab; type_text "$name"; keys C-s; sleep 2
  done
  keys Escape
  keys r
  wait_for "block " 120
  shot round-running
  wait_for "Round 1 " 1800
  shot results
  keys c; wait_for "Confirm the residual" 20; keys C-s; sleep 1
  keys 7; keys d; wait_for "Decide" 20; shot decide-form; keys Escape
  keys 8; keys x; wait_for "Record written" 20
  shot exported
fi

keys "?"
wait_for "ctrl+p" 10
shot help
keys Escape
keys C-q
wait_for "EXITED 0" 20
shot quit
echo "tmux demo: ok"
