"""Pin what QGIS's Python ships, and check that nothing shadows it.

/usr/bin/python3 -I scripts/qgis_constraints.py > constraints.txt   # pins, from QGIS's own Python
.venv/bin/python scripts/qgis_constraints.py --check constraints.txt  # nothing replaced in the venv
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geogpt_qgis.toolbelt.dependencies import protected_constraints


def check(constraints: Path) -> int:
    """Fail if a protected package resolves to another version than QGIS's (i.e. pip shadowed it)."""
    problems = []
    for line in constraints.read_text().split():
        name, _, pinned = line.partition("==")
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is missing")
            continue
        if found != pinned:
            problems.append(f"{name} {found} shadows QGIS's {pinned}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        return check(Path(sys.argv[2]))
    print("\n".join(protected_constraints()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
