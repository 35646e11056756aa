"""The machine side: git snapshots, processes, statistics, telemetry, torch harness."""
