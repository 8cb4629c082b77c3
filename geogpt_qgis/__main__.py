"""``python -m geogpt_qgis``: the headless command (see ``geogpt_qgis.cli``)."""

from __future__ import annotations

import sys

from geogpt_qgis.cli import main

sys.exit(main())
