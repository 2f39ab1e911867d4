"""`python -m hack.fidelity`: see cli.py."""

import sys

from hack.fidelity.cli import main

sys.exit(main())
