#!/usr/bin/python3
"""Counts test cases of one `bazel test` run: prints "<passed> <failed>".

Bazel reports per target; the closing line counts test cases, so each passing target
contributes the test cases of its JUnit XML (GoogleTest writes it). A target that failed,
timed out or failed to build counts its failed cases, or 1 when it left no fresh XML.
Usage: count_bazel_tests.py BAZEL_LOG RUN_MARK_FILE
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS_LINE = re.compile(r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|FAILED TO BUILD|SKIPPED)\b")


def xml_counts(label, newer_than):
    package, _, name = label[2:].partition(":")
    path = os.path.join("bazel-testlogs", package, name, "test.xml")
    if not os.path.exists(path) or os.path.getmtime(path) < newer_than:
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    cases = root.iter("testcase")
    passed = failed = 0
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            continue
        else:
            passed += 1
    return passed, failed


def main():
    log_path, mark_path = sys.argv[1], sys.argv[2]
    run_start = os.path.getmtime(mark_path)
    passed = failed = 0
    seen = set()
    with open(log_path, errors="replace") as log:
        for line in log:
            m = STATUS_LINE.match(line.strip())
            if not m or m.group(1) in seen:
                continue
            label, status = m.group(1), m.group(2)
            seen.add(label)
            # Cached results keep their XML from the earlier run: accept any age then.
            counts = xml_counts(label, 0 if "(cached)" in line else run_start)
            if status in ("PASSED", "FLAKY"):
                p, f = counts if counts and counts[0] + counts[1] > 0 else (1, 0)
                passed += p
                failed += f
            else:
                f = counts[1] if counts and counts[1] > 0 else 1
                failed += f
                passed += counts[0] if counts else 0
    if not seen:
        failed += 1  # bazel itself failed before running any test
    print(passed, failed)


if __name__ == "__main__":
    main()
