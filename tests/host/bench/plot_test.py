#!/usr/bin/env python3
"""plot_test: `convgen plot` draws every picture of a report, names every layer in its SVGs, says what a bad file is.

Usage: plot_test.py pictures CONVGEN REPORT...   every output file exists; the speedup and network SVGs name each layer;
                                                 a report without cuDNN (--ours-only) gets its roofline only
       plot_test.py errors CONVGEN REPORT        a missing file and a file that is no report give their exact messages
The interpreter running this test is the one `convgen plot` runs ($CONVGEN_PYTHON).
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = dict(os.environ, CONVGEN_PYTHON=sys.executable)


def plot(convgen, *args):
    return subprocess.run([convgen, "plot", *args], env=ENV, capture_output=True, text=True)


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def check_pictures(convgen, reports):
    failures = []
    with tempfile.TemporaryDirectory() as out:
        for report in reports:
            result = plot(convgen, "--out", out, report)
            if result.returncode != 0:
                sys.exit(f"convgen plot {report} failed:\n{result.stderr}")
            rows = load(report)["rows"]
            suites = list(dict.fromkeys(row["suite"] for row in rows))
            stem = Path(report).name.removesuffix(".gz").removesuffix(".json")
            for suite in suites:
                prefix = stem if len(suites) == 1 else f"{stem}_{suite}"
                for picture in ("roofline", "speedup", "network"):
                    for fmt in ("svg", "png"):
                        path = Path(out) / f"{prefix}_{picture}.{fmt}"
                        if not path.is_file() or path.stat().st_size == 0:
                            failures.append(f"{path.name}: not written")
                        elif fmt == "svg" and "a partial run" in path.read_text():
                            failures.append(f"{path.name}: a whole run's title says it is partial")
                        if fmt == "svg" and picture != "roofline" and path.is_file():
                            text = path.read_text()
                            failures += [f"{path.name}: layer {row['layer']} not named" for row in rows
                                         if row["suite"] == suite and
                                         not re.search(f">{re.escape(row['layer'])}( ×[0-9]+)?<", text)]
        # A run cut short (<stem>.partial.json): its pictures' titles say it covers only its first layers.
        partial = Path(out) / "cut.partial.json"
        partial.write_text(json.dumps(load(reports[0])))
        result = plot(convgen, "--out", out, str(partial))
        if result.returncode != 0:
            sys.exit(f"convgen plot {partial} failed:\n{result.stderr}")
        suites = list(dict.fromkeys(row["suite"] for row in load(reports[0])["rows"]))
        prefix = "cut.partial" if len(suites) == 1 else f"cut.partial_{suites[0]}"
        for picture in ("roofline", "speedup", "network"):
            text = (Path(out) / f"{prefix}_{picture}.svg").read_text()
            if "a partial run (its first layers only)" not in text:
                failures.append(f"{prefix}_{picture}.svg: its title does not say the run is partial")
        # A run without cuDNN (`convgen bench --ours-only`): the roofline only, and a line saying why.
        ours_only_report = load(reports[0])
        ours_only_report["cudnn_routes"] = False
        for row in ours_only_report["rows"]:
            row["cudnn"], row["speedup"] = [], None
        ours_only = Path(out) / "ours.json"
        ours_only.write_text(json.dumps(ours_only_report))
        result = plot(convgen, "--out", out, str(ours_only))
        if result.returncode != 0:
            sys.exit(f"convgen plot {ours_only} failed:\n{result.stderr}")
        if "cuDNN was not run (convgen bench --ours-only): the roofline only" not in result.stdout:
            failures.append(f"convgen plot {ours_only.name}: no line says cuDNN was not run:\n{result.stdout}")
        written = sorted(p.name for p in Path(out).glob("ours*"))
        suites = list(dict.fromkeys(row["suite"] for row in ours_only_report["rows"]))
        prefixes = ["ours"] if len(suites) == 1 else [f"ours_{suite}" for suite in suites]
        if written != sorted(["ours.json"] + [f"{p}_roofline.{fmt}" for p in prefixes for fmt in ("svg", "png")]):
            failures.append(f"convgen plot {ours_only.name} wrote {written}: expected the roofline pictures only")
    if failures:
        sys.exit("\n".join(failures))


def check_errors(convgen, not_a_report):
    expected = {
        "no/such.json.gz": "convgen plot: error: no/such.json.gz: no such file (expected a `convgen bench` JSON "
                           "report, .json or .json.gz)\n",
        not_a_report: f"convgen plot: error: {not_a_report}: expected a `convgen bench` JSON report (\"schema\": 1 "
                      "with provenance and rows)\n",
    }
    failures = []
    for path, message in expected.items():
        result = plot(convgen, path)
        if result.returncode == 0 or result.stderr != message:
            failures.append(f"convgen plot {path}: exit {result.returncode}, stderr:\n{result.stderr}"
                            f"expected:\n{message}")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("pictures", "errors"):
        sys.exit(__doc__)
    (check_pictures if sys.argv[1] == "pictures" else check_errors)(sys.argv[2], sys.argv[3:] if sys.argv[1] ==
                                                                    "pictures" else sys.argv[3])
