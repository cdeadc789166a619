"""Where CI's time went: a table of stages and the slowest tests.

Usage: python .ci/report.py STAGES_TSV [JUNIT_XML ...]

STAGES_TSV has one `stage<TAB>seconds<TAB>status` line per stage (`.ci/run`
writes it); each JUNIT_XML is the report of one pytest run, named
`<backend>-<tier>.xml` so that the slowest tests say where they ran.
"""

import pathlib
import sys
import xml.etree.ElementTree as ET

SLOWEST = 25


def read_stages(path):
    """`[(stage, seconds, status)]` in the order they ran."""
    rows = []
    for line in pathlib.Path(path).read_text().splitlines():
        stage, seconds, status = line.split("\t")
        rows.append((stage, int(seconds), status))
    return rows


def read_tests(path):
    """`[(seconds, run, test id)]` of one junit report; `run` is the file's stem."""
    run = pathlib.Path(path).stem
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        tests.append((float(case.get("time", 0.0)), run, name))
    return tests


def format_stages(rows):
    if not rows:
        return "(no stage finished)"
    width = max(len(stage) for stage, _, _ in rows)
    lines = [f"{'stage':<{width}}  seconds  status"]
    lines += [f"{stage:<{width}}  {seconds:>7}  {status}" for stage, seconds, status in rows]
    return "\n".join(lines)


def format_slowest(tests, count=SLOWEST):
    lines = [f"{count} slowest tests (setup + call, seconds, run):"]
    for seconds, run, name in sorted(tests, reverse=True)[:count]:
        lines.append(f"{seconds:8.1f}  {run:<16} {name}")
    return "\n".join(lines)


def main(argv):
    stages, *reports = argv
    print(format_stages(read_stages(stages)))
    tests = [test for path in reports if pathlib.Path(path).is_file()
             for test in read_tests(path)]
    if tests:
        print()
        print(format_slowest(tests))


if __name__ == "__main__":
    main(sys.argv[1:])
