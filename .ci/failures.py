#!/usr/bin/env python3
"""Names the tests a failed CI run failed, with the first lines of each failure (.ci/run prints this last).

Usage: failures.py --since MARKER --log LOG [REPO]

Reads the reports every test runner of `make test` leaves, only those written after MARKER was (so the reports of an
older run are never blamed): JUnit XML from Surefire (*/target/surefire-reports), Failsafe (every e2e pass:
tests-e2e/target/failsafe-reports, -gvisor, -faults) and pytest (toolrunner/target/pytest*.xml, the Makefile's
--junitxml), and the output of `go test` (egress-proxy/target/go-test.log). A run that failed outside any test (a
build error, a script) has no failing report: then the last lines of LOG, the whole run's output, are printed instead.
Standard library only; exits 0 (it reports, it does not judge).
"""

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

JUNIT_REPORTS = [
    "*/target/surefire-reports/TEST-*.xml",
    "*/target/failsafe-reports*/TEST-*.xml",
    "toolrunner/target/pytest*.xml",
]
GO_TEST_LOG = "egress-proxy/target/go-test.log"
FIRST_LINES = 8  # of each failure
MOST_DETAILED = 40  # failures printed with their lines; any further ones by name only
LOG_TAIL = 40  # lines of the log printed when no report names a failing test

GO_TEST_FAILED = re.compile(r"^(\s*)--- FAIL: (\S+)")
GO_PACKAGE_FAILED = re.compile(r"^FAIL\s+(\S+)(.*)$")


@dataclass
class Failure:
    name: str
    where: str  # the report it was read from
    lines: list[str]


def junit_failures(report: Path, repo: Path) -> list[Failure]:
    """Every testcase of a JUnit XML report with a <failure> or <error> (a flaky pass's reruns are not failures)."""
    where = str(report.relative_to(repo))
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError as e:  # a report cut short, e.g. by a run killed while writing it
        return [Failure(f"(unreadable report {report.name})", where, [str(e)])]
    failures = []
    for case in root.iter("testcase"):
        for problem in case:
            if problem.tag not in ("failure", "error"):
                continue
            name = ".".join(part for part in (case.get("classname", ""), case.get("name", "")) if part)
            message = (problem.get("message") or "").strip()
            lines = [line.rstrip() for line in (problem.text or "").strip().splitlines()]
            # Surefire's text starts with the exception and its message; pytest's is the traceback, whose last
            # lines say what failed: the message first, unless the text already says it.
            if message and not any(message.splitlines()[0] in line for line in lines[:FIRST_LINES]):
                lines = message.splitlines() + lines
            failures.append(Failure(name or "(unnamed test)", where, lines or [f"({problem.tag}, no message)"]))
    return failures


def go_failures(log: Path, repo: Path) -> list[Failure]:
    """The `--- FAIL: Test` blocks of plain `go test` output (the innermost subtests; a panic's first lines with the
    test it ended), and a package that failed without any by its compiler's or vet's errors (printed first, under
    `# package`), or else by the lines before its FAIL (a panic outside any test, a TestMain)."""
    where = str(log.relative_to(repo))
    failures: list[Failure] = []
    before: list[str] = []  # lines since the last package's verdict that belong to no failing test
    package_start = 0  # the index in failures of the first failing test since then
    build_errors: dict[str, list[str]] = {}  # by package
    building: list[str] | None = None  # the build errors being read
    current: Failure | None = None
    depth = 0
    panicking = False
    for line in log.read_text(errors="replace").splitlines():
        test = GO_TEST_FAILED.match(line)
        package = GO_PACKAGE_FAILED.match(line)
        if test:
            indent, name = test.groups()
            # A parent test fails because its subtest did: name only the subtest.
            if len(failures) > package_start and name.startswith(failures[-1].name + "/"):
                failures.pop()
            current, depth, panicking, building = Failure(name, where, []), len(indent), False, None
            failures.append(current)
        elif package or line.startswith(("ok ", "ok\t", "?  ")):
            if package:  # the package's tests are named after it only here, after them
                for failure in failures[package_start:]:
                    failure.name = f"{package.group(1)}.{failure.name}"
                if len(failures) == package_start:
                    lines = build_errors.get(package.group(1)) or before[-FIRST_LINES + 1 :]
                    failures.append(Failure(f"go package {package.group(1)}", where, [*lines, line]))
            current, before, package_start, panicking, building = None, [], len(failures), False, None
        elif line.startswith("# "):  # `# example.com/x [example.com/x.test]`: its build's errors follow
            current, building = None, build_errors.setdefault(line.split()[1], [])
        elif building is not None:
            building.append(line)
        elif current and (panicking or line.startswith(" " * (depth + 4))):
            current.lines.append(line.strip())
        elif current and line.startswith("panic: "):
            panicking = True
            current.lines.append(line.strip())
        elif line.strip() and line.strip() != "FAIL":
            current = None
            before.append(line)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", type=Path, required=True, help="a file made when the run began")
    parser.add_argument("--log", type=Path, required=True, help="the whole run's output")
    parser.add_argument("repo", type=Path, nargs="?", default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    repo = args.repo.resolve()
    since = args.since.stat().st_mtime

    reports = [p for pattern in JUNIT_REPORTS for p in repo.glob(pattern)] + [repo / GO_TEST_LOG]
    # This run's reports, in the order they were written: the first failure first.
    fresh = sorted((p for p in reports if p.is_file() and p.stat().st_mtime >= since), key=lambda p: p.stat().st_mtime)
    failures = []
    for report in fresh:
        failures += go_failures(report, repo) if report.suffix == ".log" else junit_failures(report, repo)

    if not failures:
        print(f"no failing test report found; the last {LOG_TAIL} lines of the log ({args.log}) were:")
        tail = args.log.read_text(errors="replace").splitlines()[-LOG_TAIL:] if args.log.is_file() else ["(no log)"]
        print("\n".join("    " + line for line in tail))
        return 0

    count = f"{len(failures)} failing test{'s' if len(failures) > 1 else ''}"
    print(f"==== {count}, with the first lines of each (the whole output: {args.log}) ====")
    for failure in failures[:MOST_DETAILED]:
        print(f"FAILED {failure.name}    [{failure.where}]")
        for line in failure.lines[:FIRST_LINES]:
            print(("    " + line.expandtabs(4)).rstrip())
        if len(failure.lines) > FIRST_LINES:
            print(f"    ... ({len(failure.lines) - FIRST_LINES} more lines in {failure.where})")
    if len(failures) > MOST_DETAILED:
        print(f"... and {len(failures) - MOST_DETAILED} more, named below")
    print(f"==== {count}: ====")
    for failure in failures:
        print(f"FAILED {failure.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
