"""`python -m citescope.workflows.cli ...`, as run.py."""

import sys

from citescope.workflows.cli.app import app

sys.exit(app())
