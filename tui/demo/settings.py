"""The demo's settings (no imports: `gpuopt --help` reads them and stays light).

Its run and block counts are those of `gpuopt baseline` and `gpuopt round`: the demo
follows everyone's rules.
"""

DEMO_TITLE = "Demo: a naive softmax"  # how a later `gpuopt demo` finds its session again
