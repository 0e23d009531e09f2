#!/usr/bin/env python3
"""Did the README's test command run the whole suite? A build that silently leaves out the GUI or the
kernels registers fewer suites and still says "100% tests passed"; this check makes that a failure.

    usage: .ci/check-test-run.py [BUILD_DIR]        (default build/default)

It reads BUILD_DIR/ctest-results.xml (the JUnit file of `ctest --preset default`) and checks that
  - te-workbench and the CUDA kernels library were built,
  - CTest ran at least the number of suites in tests/expected-suites.txt,
  - every suite passed, except those labelled `gpu`, which skip where there is no GPU.
Exit 0 when all hold, 1 with one line per problem.
"""
import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPECTED_FILE = ROOT / "tests" / "expected-suites.txt"
ALLOWED_TO_SKIP = "gpu"


def expected_suite_count():
    lines = [line.strip() for line in EXPECTED_FILE.read_text().splitlines()]
    numbers = [line for line in lines if line and not line.startswith("#")]
    if len(numbers) != 1 or not numbers[0].isdigit():
        sys.exit(f"check: {EXPECTED_FILE} must hold one number (the suites a full build registers)")
    return int(numbers[0])


def labels_by_test(build):
    listing = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                             check=True, capture_output=True, text=True).stdout
    labels = {}
    for test in json.loads(listing)["tests"]:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        labels[test["name"]] = props.get("LABELS", [])
    return labels


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "default")
    problems = []
    for artifact, what in ((build / "app" / "te-workbench", "the GUI (te-workbench)"),
                           (build / "kernels" / "libtewb_kernels.a", "the CUDA kernels library")):
        if not artifact.is_file():
            problems.append(f"{what} was not built: {artifact} is missing")

    results = build / "ctest-results.xml"
    if not results.is_file():
        problems.append(f"{results} is missing: did `ctest --preset default` run?")
        return report(problems, None)
    cases = ET.parse(results).getroot().findall("testcase")
    labels = labels_by_test(build)
    expected = expected_suite_count()
    passed = skipped = 0
    for case in cases:
        name, status = case.get("name"), case.get("status")
        if status == "run" and case.find("failure") is None:
            passed += 1
        elif status == "notrun" and case.find("skipped") is not None and ALLOWED_TO_SKIP in labels.get(name, []):
            skipped += 1
        else:
            problems.append(f"{name}: {status}, labels {labels.get(name, [])} (only label '{ALLOWED_TO_SKIP}' may skip)")
    if len(cases) < expected:
        problems.append(f"CTest ran {len(cases)} suites, fewer than the {expected} of {EXPECTED_FILE.relative_to(ROOT)}: "
                        "the build left something out")
    summary = f"{len(cases)} suites ran ({passed} passed, {skipped} skipped: label '{ALLOWED_TO_SKIP}'), {expected} expected"
    if len(cases) > expected and not problems:
        summary += f"; raise {EXPECTED_FILE.relative_to(ROOT)} to {len(cases)}"
    return report(problems, summary)


def report(problems, summary):
    for problem in problems:
        print(f"check: FAIL: {problem}")
    if summary:
        print(f"check: {summary}")
    print("check: " + ("FAIL" if problems else "PASS"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
