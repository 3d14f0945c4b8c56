"""citescope command line: python run.py --help"""

from citescope.workflows.cli import main

if __name__ == "__main__":
    main()
