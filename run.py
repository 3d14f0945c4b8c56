"""citescope command line: python run.py --help"""
from workflows.cli import app

if __name__ == "__main__":
    app()
