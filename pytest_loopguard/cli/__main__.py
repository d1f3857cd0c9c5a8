"""`python -m pytest_loopguard.cli`: the `loopguard` command."""

import sys

from ._main import main

sys.exit(main())
