"""One module per `gpuopt` command's handlers, importing what they need at their head.

Each command's parser (`add_parser(sub)`, argparse only) lives in tui/commands/parsers/ and
names its handlers as "tui.commands.M:function" strings, so `gpuopt --help` and
`gpuopt CMD --help` load none of these modules (tests/cli/test_cli_head_imports.py).
"""
