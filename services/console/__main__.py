"""``python -m services.console``: the console without the ``ragline`` entry point."""

import sys

from ragline.console.cli import serve

sys.exit(serve())
