"""citescope command line: python run.py --help"""
from workflows.cli import main

if __name__ == "__main__":
    main()
