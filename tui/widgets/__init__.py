"""Widgets of the gpuopt app."""
