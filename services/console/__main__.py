"""``python -m services.console``: the console without the ``ragline`` entry point."""

import sys

from ragline.console.cli import serve
from services.console.api import build

sys.exit(serve(build=build))
