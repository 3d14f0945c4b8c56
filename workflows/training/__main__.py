"""`python -m citescope.workflows.training pairs ...`: `run.py train` without the runtime's imports,
for a machine that has torch but not the product's packages (a lent GPU; docs/models.md)."""

from citescope.workflows.training.commands import train_app

train_app(prog_name="python -m citescope.workflows.training")
