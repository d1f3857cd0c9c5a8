"""Scoring policies on labelled real runs, and diffs of the verdicts of two policies."""
