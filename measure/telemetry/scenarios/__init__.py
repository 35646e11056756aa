"""Replay scenarios (JSON), shipped as package data."""
