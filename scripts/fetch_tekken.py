"""Extract Mistral's Tekken vocabulary from the mistral-common wheel (downloaded by pip, never installed).

python scripts/fetch_tekken.py WHEEL_DIR OUT_JSON
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

MEMBER = "mistral_common/data/tekken_240911.json"


def main(wheel_dir: str, out: str) -> int:
    wheels = sorted(Path(wheel_dir).glob("mistral_common-*.whl"))
    if not wheels:
        print(f"no mistral_common wheel in {wheel_dir}", file=sys.stderr)
        return 1
    with zipfile.ZipFile(wheels[-1]) as wheel:
        Path(out).write_bytes(wheel.read(MEMBER))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
