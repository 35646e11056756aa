"""Honest candidates (ours, KernelBench format, same layout as tests/torch/cheats): the
check must pass them, as before."""
