#!/usr/bin/env python3
"""The slowest tests of a CTest run, from its JUnit file, so a slow newcomer shows in CI's log at once.

    usage: .ci/slowest-tests.py BUILD_DIR [COUNT]        (COUNT: default 10)

Reads BUILD_DIR/ctest-results.xml and prints COUNT lines, slowest first: seconds, status, name; then the
sum of every test's time (with `ctest -j2` that is about twice the stage's wall time). Prints a line and
exits 0 when there is no such file: the listing informs, it never fails a stage.
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    build = pathlib.Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    results = build / "ctest-results.xml"
    if not results.is_file():
        print(f"ci: no {results}: no test times to list")
        return 0
    cases = []
    for case in ET.parse(results).getroot().findall("testcase"):
        status = case.get("status", "?")
        if case.find("failure") is not None:
            status = "failed"
        elif case.find("skipped") is not None:
            status = "skipped"
        elif status == "run":
            status = "passed"
        cases.append((float(case.get("time", "0") or 0), status, case.get("name", "?")))
    cases.sort(reverse=True)
    print(f"ci: the {min(count, len(cases))} slowest of {len(cases)} tests in {build}:")
    for seconds, status, name in cases[:count]:
        print(f"ci:   {seconds:7.1f} s  {status:<7} {name}")
    print(f"ci:   {sum(c[0] for c in cases):7.1f} s  all tests together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
