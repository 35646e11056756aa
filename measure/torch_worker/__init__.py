"""gpuopt's PyTorch worker: time, audit, profile or capture one workload, print one JSON line.

A self-contained package (standard library and torch only, nothing else of gpuopt), run by
path (`python .../torch_worker/__main__.py` or `python .../torch_worker`) or as
`python -m torch_worker` from its parent folder, with the project's own interpreter, so a GPU
box's venv can run it without gpuopt installed there:

    python torch_worker time     --kind torch --spec pkg.mod:bench
    python torch_worker audit    --kind kernelbench --spec problems/softmax.py
    python torch_worker profile  --kind kernelbench --spec problems/softmax.py \
                                    [--trace out.trace.json] [--steps 3] [--no-probe]
    python torch_worker outputs  --kind torch --spec pkg.mod:bench --save out.pt \
                                    [--compare-to ref.pt] [--trials 5] [--seed 0]

The working directory is the checkout (a snapshot's worktree); it goes first on sys.path.
Workload kinds (docs/torch_workloads.md has the whole protocol):

- torch: MODULE:CALLABLE names a factory `bench(device, dtype, seed, training)` (it may
  accept any subset of those keywords) returning a dict: `fn` (the callable to time),
  `inputs` (its positional arguments), optionally `kwargs`, `params` (tensors, or a dict of
  named tensors, whose gradients a training path compares), `names` (output names).
- kernelbench: PATH is a KernelBench problem file: `class Model(nn.Module)`, `get_inputs()`,
  `get_init_inputs()`; `ModelNew` is used when the file defines it. The model is built right
  after seeding, and the inputs after seeding again, on both sides alike.

The last line on stdout is one JSON object with "gpuopt_worker": MODE. On failure it carries
"error" (one line) and "traceback", and the exit status is 1 (2 for bad arguments).
"""
