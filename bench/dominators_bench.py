"""`fasthprof dominators` against `fasthprof summary` on the same large heap dump (issue 31's goal:
dominators in at most twice summary's time): CPU seconds (user + system: on a machine shared with
other jobs the wall time includes waiting for a core), wall seconds, peak RSS, alternating, medians
of --rounds runs, then the ratio dominators / summary, and the bytes per object `dominators`
states for its graph, its dominators and its retained sizes. Then VisualVM's retained-size
computation of the same file (bench/visualvm_retained.py: the Debian package's heap library,
headless), once, and the ratio of its time to dominators'; when it does not finish within
--visualvm-timeout seconds, how far it got.

The dump is bench/HeapBuilder.java's heap written by `jcmd GC.heap_dump` (command_bench.py's), in
FASTHPROF_BENCH_DIR, or the file given with --dump. The default is issue 31's 16 M objects (a dump
of about 700 MB; the JVM that builds it takes a 10 GiB heap, VisualVM 8 GiB).

  python3 bench/dominators_bench.py [--objects 16000000] [--heap 10g] [--rounds 3] [--dump FILE]
      [--no-visualvm] [--visualvm-heap 8g] [--visualvm-timeout 900] [--smoke]
Environment: FASTHPROF_COMMAND, JAVA17_HOME (set by meson), FASTHPROF_BENCH_DIR.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import visualvm_retained
from command_bench import make_dumps, timed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=16_000_000)
    parser.add_argument("--heap", default="10g")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dump", help="an existing dump instead of HeapBuilder's")
    parser.add_argument("--no-visualvm", action="store_true")
    parser.add_argument("--visualvm-heap", default="8g")
    parser.add_argument("--visualvm-timeout", type=float, default=900)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.objects, args.heap, args.rounds, args.visualvm_heap, args.visualvm_timeout = 200_000, "1g", 1, "1g", 15
    command = os.environ["FASTHPROF_COMMAND"]
    java_home = os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-dombench-", dir=base))
    try:
        dump = pathlib.Path(args.dump) if args.dump else make_dumps(java_home, args.objects, args.heap, folder)[0]
        size = dump.stat().st_size
        sides = {"summary": [command, "summary", str(dump)], "dominators": [command, "dominators", str(dump)]}
        for side in sides.values():  # into the page cache
            timed(side)
        runs = {name: [] for name in sides}
        for round_number in range(args.rounds):
            for name in (sides if round_number % 2 == 0 else reversed(list(sides))):
                runs[name].append(timed(sides[name]))
        medians = {}
        for name, samples in runs.items():
            medians[name] = (statistics.median(s[0] for s in samples), max(s[1] for s in samples),
                             statistics.median(s[2] for s in samples))
            print(f"{name:10s} median {medians[name][0]:7.3f} s wall, {medians[name][2]:7.3f} s CPU; "
                  f"peak RSS {medians[name][1]:8.1f} MiB", flush=True)
        stated = json.loads(subprocess.run([command, "dominators", "--json", "--top", "1", "--depth", "0", str(dump)],
                                           check=True, capture_output=True, text=True).stdout)
        memory = stated["memory"]
        print(f"dump: {size / 1e6:.1f} MB, {stated['objects']} objects, {stated['references']} references; "
              f"bytes per object: graph {memory['graph_bytes_per_object']:.1f}, dominators "
              f"{memory['dominator_bytes_per_object']:.1f}, retained sizes {memory['retained_size_bytes_per_object']:.1f}")
        print(f"dominators / summary: CPU {medians['dominators'][2] / medians['summary'][2]:.2f}, "
              f"wall {medians['dominators'][0] / medians['summary'][0]:.2f}", flush=True)
        if not args.no_visualvm:
            against_visualvm(java_home, dump, folder, args, medians["dominators"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def against_visualvm(java_home, dump, folder, args, dominators):
    """VisualVM's retained sizes of the same file, once, beside `dominators`' medians."""
    got = visualvm_retained.run(java_home, dump, folder, args.visualvm_heap, args.visualvm_timeout)
    where = f"peak RSS {got['rss']:.1f} MiB, {got['cpu']:.3f} s CPU" if "rss" in got else ""
    if got.get("cached"):
        where += " (from the index a previous run left beside the dump: not a first opening)"
    if "retained" in got:
        print(f"visualvm   {got['retained']:7.3f} s wall (heap opened and indexed in {got['opened']:.3f} s, "
              f"{got['objects']} instances), {where}")
        print(f"visualvm / dominators: wall {got['retained'] / dominators[0]:.1f}, CPU {got['cpu'] / dominators[2]:.1f}",
              flush=True)
    elif "opened" in got:
        print(f"visualvm   {got['error']}: heap opened and indexed in {got['opened']:.3f} s "
              f"({got['objects']} instances), retained sizes not done; {where}", flush=True)
    else:
        print(f"visualvm   {got['error']} {where}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
