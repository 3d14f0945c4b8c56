"""Evaluation, dataset calibration and benchmarks: the runtime never imports this package."""
