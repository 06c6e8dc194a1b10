"""`python -m tools.docs_reference --write` rewrites docs/reference/; `--check` exits 1 if stale."""

import sys

from tools.docs_reference.generate import main

sys.exit(main())
