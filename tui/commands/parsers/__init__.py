"""The parsers of the `gpuopt` commands: one module per command, argparse and help text
only (no pydantic, rich or engine), so `gpuopt --help` and `gpuopt CMD --help` stay fast.
A parser names its handlers as "tui.commands.MODULE:FUNCTION" strings (set_defaults(handler=...)),
which tui.cli imports once the command line is parsed."""
