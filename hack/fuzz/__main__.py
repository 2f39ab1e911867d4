"""`python -m hack.fuzz`: see cli.py."""

import sys

from hack.fuzz.cli import main

sys.exit(main())
