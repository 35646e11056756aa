"""One module per `gpuopt` command: `add_parser(sub)` and a handler set on the parser.

Keep module level to argparse only: heavy imports go inside the handler.
"""
