#!/usr/bin/env python3
"""Compare two tools' GradBench logs: unfad's against the hand-written C++ tool's.

Reads the `.jsonl` logs that `gradbench run -o LOG` writes (one JSON object a line, a
`message` then its `response`) and prints a markdown table with, per size (d, k) and for
both functions, unfad's time, the C++ tool's time and their ratio, plus unfad's
jacobian / objective ratio.

The time of one `evaluate` message is the mean of its `evaluate` timings, the statistic
GradBench's own scorer uses (`--stat median` or `--stat min` take another). Each tool may
be given several logs (runs of the same eval); their timings for one size and function
are pooled before the statistic is taken.

For gmm the table has one row per size (d, k, n); for the other evals (`--generic`), one
row per size as the eval describes it (`n=16,m=128`) and function.

It also checks the eval's verdicts: every `analysis` message of each log must say
`valid: true`, otherwise the failing sizes are listed on stderr and the exit status is 1.

Plain Python 3, no dependencies:

    python3 bench/gradbench/compare.py --unfad unfad-1.jsonl unfad-2.jsonl \
        --cpp manual-1.jsonl manual-2.jsonl
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict

FUNCTIONS = ("objective", "jacobian")


def read_log(path, timings, invalid):
    """Adds the `evaluate` timings of every gmm evaluate message of the log at `path`
    to `timings[(d, k, function)]`, and appends to `invalid` each evaluate the eval
    found invalid (or that failed)."""
    pending = {}  # message id -> (d, k, n, function) of an evaluate awaiting its verdict
    messages = {}  # message id -> message, until its response arrives
    with open(path) as log:
        for line in log:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            if "message" in entry:
                message = entry["message"]
                messages[message["id"]] = message
                if message.get("kind") == "analysis":
                    size = pending.pop(message["of"], None)
                    if size is not None and not message.get("valid", False):
                        invalid.append((path, size, message.get("error", "")))
                continue
            response = entry.get("response", {})
            message = messages.pop(response.get("id"), None)
            if message is None or message.get("kind") != "evaluate":
                continue
            function = message["function"]
            size = message["input"]
            if GENERIC:
                key = (message.get("description", ""), function)
            else:
                key = (size["d"], size["k"], size["n"], function)
            if response.get("success") is False:
                invalid.append((path, key, response.get("error", "failed")))
                continue
            pending[message["id"]] = key
            for timing in response.get("timings", []):
                if timing["name"] == "evaluate":
                    timings[key].append(timing["nanoseconds"])
    # An evaluate with no analysis afterwards was never judged.
    for key in pending.values():
        invalid.append((path, key, "no analysis message"))


def read_tool(paths):
    timings = defaultdict(list)
    invalid = []
    for path in paths:
        read_log(path, timings, invalid)
    return timings, invalid


GENERIC = False


def generic_table(unfad, cpp, stat, stat_name):
    """One row per (description, function) both tools ran, in the order of the evals."""
    print(f"Times in ms ({stat_name} of the `evaluate` timings); ratio = unfad / C++.")
    print()
    print("| size | function | unfad | C++ | ratio |")
    print("|---|---|---:|---:|---:|")
    for key in unfad:
        if key not in cpp:
            continue
        ours, theirs = stat(unfad[key]), stat(cpp[key])
        print(
            f"| {key[0]} | {key[1]} | {milliseconds(ours)} | {milliseconds(theirs)} "
            f"| {ours / theirs:.2f} |"
        )


def milliseconds(nanoseconds):
    return f"{nanoseconds / 1e6:.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unfad", nargs="+", required=True, help="unfad's log(s)")
    parser.add_argument("--cpp", nargs="+", required=True, help="the C++ tool's log(s)")
    parser.add_argument(
        "--stat",
        choices=("mean", "median", "min"),
        default="mean",
        help="statistic of one size's evaluate timings (GradBench's scorer uses the mean)",
    )
    parser.add_argument(
        "--generic",
        action="store_true",
        help="any eval: rows by the eval's description of each size, and by function",
    )
    args = parser.parse_args()
    stat = {"mean": statistics.fmean, "median": statistics.median, "min": min}[args.stat]
    global GENERIC
    GENERIC = args.generic

    unfad, unfad_invalid = read_tool(args.unfad)
    cpp, cpp_invalid = read_tool(args.cpp)
    for path, key, error in unfad_invalid + cpp_invalid:
        print(f"not validated: {path} {key}: {error}", file=sys.stderr)

    if GENERIC:
        generic_table(unfad, cpp, stat, args.stat)
        return 1 if unfad_invalid or cpp_invalid else 0
    sizes = sorted({key[:3] for key in unfad} & {key[:3] for key in cpp})
    print(
        f"Times in ms ({args.stat} of the `evaluate` timings); ratio = unfad / C++; "
        "J/O = unfad's jacobian / objective."
    )
    print()
    print(
        "| d | k | n | objective unfad | objective C++ | ratio "
        "| jacobian unfad | jacobian C++ | ratio | unfad J/O |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d, k, n in sizes:
        cells = [str(d), str(k), str(n)]
        unfad_times = {}
        for function in FUNCTIONS:
            ours = unfad.get((d, k, n, function))
            theirs = cpp.get((d, k, n, function))
            if not ours or not theirs:
                cells += ["-", "-", "-"]
                continue
            unfad_times[function] = stat(ours)
            cpp_time = stat(theirs)
            cells += [
                milliseconds(unfad_times[function]),
                milliseconds(cpp_time),
                f"{unfad_times[function] / cpp_time:.2f}",
            ]
        if len(unfad_times) == len(FUNCTIONS):
            cells.append(f"{unfad_times['jacobian'] / unfad_times['objective']:.2f}")
        else:
            cells.append("-")
        print("| " + " | ".join(cells) + " |")
    return 1 if unfad_invalid or cpp_invalid else 0


if __name__ == "__main__":
    sys.exit(main())
