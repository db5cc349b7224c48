"""Annotator quality (docs/quality.md): the per-annotator report for leads."""
