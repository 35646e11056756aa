"""Past one box: baselines and rounds run as Slurm jobs, followed from the login node.

- `journaling`: the node's ledger, which also journals every record it stores;
- `node`: what the job runs on its compute node;
- `jobs`: the login side: submit, follow (import the journal, show the job's state),
  cancel, and close what a job left behind.
"""
