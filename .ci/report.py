"""Where CI's time went: a table of stages and the slowest tests.

Usage: python .ci/report.py STAGES_TSV [SAMPLES_TSV] [JUNIT_XML ...]

STAGES_TSV has one `stage<TAB>began<TAB>seconds<TAB>status` line per stage
(`.ci/run` writes it; `began` counts seconds from the start of the run);
SAMPLES_TSV (`.tsv`) one `seconds<TAB>busy<TAB>idle<TAB>available` line per
sample of the machine: /proc/stat's busy and idle jiffies of all cores
so far, and MemAvailable in MiB. Each JUNIT_XML is the report of one
pytest run, named after its make target so that the slowest tests say
where they ran.
"""

import pathlib
import sys
import xml.etree.ElementTree as ET

SLOWEST = 25


def read_stages(path):
    """`[(stage, began, seconds, status)]` in the order they ended."""
    rows = []
    for line in pathlib.Path(path).read_text().splitlines():
        stage, began, seconds, status = line.split("\t")
        rows.append((stage, int(began), int(seconds), status))
    return rows


def read_samples(path):
    """`[(seconds, busy, idle, available_mib)]` in time order."""
    samples = []
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 4 and all(field.isdigit() for field in fields):
            samples.append(tuple(int(field) for field in fields))
    return samples


def machine_during(samples, begun, ended):
    """`(busy percent, least available MiB)` between two times, or `None`
    when fewer than two samples fall in between."""
    inside = [sample for sample in samples if begun <= sample[0] <= ended]
    if len(inside) < 2:
        return None
    busy = inside[-1][1] - inside[0][1]
    idle = inside[-1][2] - inside[0][2]
    total = busy + idle
    return (100.0 * busy / total if total else 0.0), min(sample[3] for sample in inside)


def read_tests(path):
    """`[(seconds, run, test id)]` of one junit report; `run` is the file's stem."""
    run = pathlib.Path(path).stem
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        tests.append((float(case.get("time", 0.0)), run, name))
    return tests


def format_stages(rows, samples=()):
    if not rows:
        return "(no stage finished)"
    width = max(len(stage) for stage, *_ in rows)
    lines = [f"{'stage':<{width}}  began  seconds  status  cores busy  least free memory"]
    for stage, began, seconds, status in sorted(rows, key=lambda row: row[1]):
        machine = machine_during(samples, began, began + seconds)
        busy, free = (f"{machine[0]:.0f}%", f"{machine[1]:,} MiB") if machine else ("", "")
        lines.append(f"{stage:<{width}}  {began:>5}  {seconds:>7}  {status:<6}  "
                     f"{busy:>10}  {free:>17}")
    if len(samples) >= 2:
        busy, free = machine_during(samples, samples[0][0], samples[-1][0])
        lines.append(f"whole run: cores {busy:.0f}% busy, least free memory {free:,} MiB")
    return "\n".join(lines)


def format_slowest(tests, count=SLOWEST):
    lines = [f"{count} slowest tests (setup + call, seconds, run):"]
    for seconds, run, name in sorted(tests, reverse=True)[:count]:
        lines.append(f"{seconds:8.1f}  {run:<16} {name}")
    return "\n".join(lines)


def main(argv):
    stages, *others = argv
    sample_files = [path for path in others if path.endswith(".tsv")]
    reports = [path for path in others if path.endswith(".xml")]
    samples = [sample for path in sample_files if pathlib.Path(path).is_file()
               for sample in read_samples(path)]
    print(format_stages(read_stages(stages), samples))
    tests = [test for path in reports if pathlib.Path(path).is_file()
             for test in read_tests(path)]
    if tests:
        print()
        print(format_slowest(tests))


if __name__ == "__main__":
    main(sys.argv[1:])
