"""plugins.qgis.org's upload scan on the zip ``make package`` builds: 0 findings, or ``make lint`` fails.

    python scripts/upload_gate.py

Builds the zip in a temporary folder, unpacks it as the site does, and runs
the site's Bandit tests (``package_checks.BANDIT_MANDATORY`` and
``BANDIT_SKIPPABLE``, every severity) and ``detect-secrets scan --all-files``
(``metadata.txt`` excluded) on what it holds.  Prints the findings per test,
and how many lines waive a test with ``# nosec``: each must name its test and
say why (``# nosec B603 # fixed argv, no shell``).  Exit 1 on any finding.
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import package_checks  # sibling scripts, found through the line above
from plugin_dist import PACKAGE, PackageError, package


def scan(archive: Path, unpack_to: Path) -> int:
    """Scan the zip's contents; print the report; the number of findings (waivers without a reason count)."""
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(unpack_to)
    folder = unpack_to / PACKAGE
    findings = package_checks.bandit_findings(folder)
    by_test = Counter(finding["test_id"] for finding in findings)
    mandatory = sum(n for test, n in by_test.items() if test in package_checks.BANDIT_MANDATORY)
    print(
        f"Bandit, the site's {len(package_checks.BANDIT_MANDATORY)} mandatory and "
        f"{len(package_checks.BANDIT_SKIPPABLE)} skippable tests on {archive.name}: "
        f"{mandatory} mandatory, {len(findings) - mandatory} skippable findings"
    )
    for test, count in sorted(by_test.items()):
        kind = "mandatory" if test in package_checks.BANDIT_MANDATORY else "skippable"
        print(f"  {test} ({kind}): {count}")
    for finding in findings:
        print(f"    {package_checks.describe_bandit(finding, folder)}")
    secrets = package_checks.secrets_findings(folder)
    print(f"detect-secrets --all-files (metadata.txt excluded): {len(secrets)} findings")
    for line in secrets:
        print(f"    {line}")
    waivers, unexplained = package_checks.nosec_lines(folder)
    print(f"# nosec lines: {waivers} ({len(unexplained)} without their test id and a reason)")
    for line in unexplained:
        print(f"    {line}")
    return len(findings) + len(secrets) + len(unexplained)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="geogpt-upload-gate-") as temp:
        try:
            archive = package(Path(temp) / "dist", bandit=False)  # scanned below, from the zip
        except PackageError as error:
            for problem in error.problems:
                print(f"error: {problem}", file=sys.stderr)
            return 1
        found = scan(archive, Path(temp) / "unpacked")
    print("upload gate: " + ("passed" if not found else f"FAILED, {found} findings"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
