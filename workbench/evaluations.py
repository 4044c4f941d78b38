"""Evaluation runs of the workbench (filled in by the evaluation panel)."""
