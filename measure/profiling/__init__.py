"""Profiles: the machine's ceilings, roofline arithmetic, and importers of Nsight output.

Pure Python (no torch, nothing of gpuopt's other packages): the worker measures, this
package reads and classifies what it measured.
"""
