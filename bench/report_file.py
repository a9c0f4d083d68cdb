"""report_file: reads a `convgen bench` JSON report for the table scripts of bench/, plain or gzipped (as
bench/results publishes them); a file that is no report ends the script with an error that names it."""
import gzip
import json
import sys


def read_report(path, tool):
    """The report at `path`; exits with "TOOL: error: ..." naming the file when it cannot be read or has no rows."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            report = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        sys.exit(f"{tool}: error: cannot read {path} as a `convgen bench` report: {error}")
    if not isinstance(report, dict) or "rows" not in report:
        sys.exit(f"{tool}: error: {path} is not a `convgen bench` report (it has no rows)")
    return report
