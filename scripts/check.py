#!/usr/bin/env python3
"""Runs every test of a build (lit, ctest, then pytest over the Python
package's tests and the benchmark tools' tests) and prints one summary line.

Usage: scripts/check.py BUILD_DIR

The runners write JUnit XML (lit --xunit-xml-output, ctest --output-junit,
pytest --junitxml); this script reads the reports with the standard
library's XML parser and prints, as its last line, `N passed, M failed, K
skipped` over all three (lit's UNSUPPORTED tests and ctest's and pytest's
skipped tests count as skipped). pytest runs under $PYTEST_PYTHON (default
Debian's /usr/bin/python3, where python3-torch is installed) with the build
tree's package first on PYTHONPATH. Exits 1 when a test failed or a runner
produced no report, 0 otherwise.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

LIT = os.environ.get("LIT", "/usr/lib/llvm-22/bin/lit")
PYTEST_PYTHON = os.environ.get("PYTEST_PYTHON", "/usr/bin/python3")
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def count(report):
    """(passed, failed, skipped) of a JUnit XML file."""
    passed = failed = skipped = 0
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    lit_xml = os.path.join(build, "lit-results.xml")
    ctest_xml = os.path.join(build, "ctest-results.xml")
    pytest_xml = os.path.join(build, "pytest-results.xml")
    for stale in (lit_xml, ctest_xml, pytest_xml):
        if os.path.exists(stale):
            os.remove(stale)

    jobs = str(os.cpu_count() or 2)
    subprocess.call([LIT, "-sv", "-j", jobs, "--xunit-xml-output", lit_xml,
                     os.path.join(build, "test")])
    subprocess.call(["ctest", "--test-dir", build, "--output-on-failure",
                     "-j", jobs, "--output-junit", ctest_xml])
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    subprocess.call([PYTEST_PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                     "--junitxml", pytest_xml, os.path.join(SOURCE, "python", "tests"),
                     os.path.join(SOURCE, "bench", "tests")],
                    env=env)

    totals = [0, 0, 0]
    missing = []
    for name, report in (("lit", lit_xml), ("ctest", ctest_xml), ("pytest", pytest_xml)):
        if not os.path.exists(report):
            missing.append(name)
            continue
        for i, n in enumerate(count(report)):
            totals[i] += n
    for name in missing:
        print(f"check: {name} produced no report", file=sys.stderr)
        totals[1] += 1
    print(f"{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
