"""A shipped set of cheating candidates (ours, in KernelBench format) that the check must fail.

Each file is a variant's problem file: the reference (`Model`, `get_inputs`,
`get_init_inputs`) above the line `# --- candidate ---`, the candidate (`ModelNew`, and
whatever else it changes) below. The baseline's file is the part above the line. Its
docstring's first line names the trick; `TRICK = "…"` holds the words the check must say.
"""
