"""`gpuopt bisect`: the commit that moved the metric, found with paired rounds.

- `search`: the search as pure state (which interval is open, what to measure next, the
  answer), rebuilt from the stored steps;
- `steps`: one step's interleaved round over the commits it compares, with the paired
  statistics and the sequential rule of a round (a sampler is injected, so the benchmark
  drives it with synthetic values);
- `conduct`: the commits, their detached worktrees, builds, checks and runs, the ledger;
- `record` and `words`: the stored record and what a person reads of it.
"""
