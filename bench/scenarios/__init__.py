"""The five bench scenarios (S1-S5); each exposes ``run(targets, cfg) -> dict``."""
