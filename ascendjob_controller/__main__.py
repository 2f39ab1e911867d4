"""`python -m ascendjob_controller` is the same as the `ascendjob-controller` console script."""

import sys

from ascendjob_controller.cli import main

if __name__ == "__main__":
    sys.exit(main())
