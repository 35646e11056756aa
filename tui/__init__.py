"""The Textual app and the `gpuopt` command line."""
