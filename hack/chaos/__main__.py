"""`python -m hack.chaos`: see hack/chaos/__init__.py and docs/chaos.md."""

import sys

from hack.chaos.cli import main

sys.exit(main())
