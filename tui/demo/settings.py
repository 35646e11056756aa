"""The demo's run counts (no imports: `gpuopt --help` reads them and stays light).

Runs are cheap once torch is preloaded (about 0.3 s each on a 2-vCPU VM): enough of them
that a shared CPU's slow processes (1.2-1.7x, one in five or so) cannot tip a verdict.
"""

DEMO_RUNS = 24
DEMO_MIN_BLOCKS = 12
DEMO_MAX_BLOCKS = 32
# A shared CPU has slow spells of a few seconds: a baseline whose halves fall on either
# side of one is recorded again (each attempt stays in the ledger and the record).
BASELINE_RETRIES = 3

DEMO_TITLE = "Demo: a naive softmax"  # how a later `gpuopt demo` finds its session again
