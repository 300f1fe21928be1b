#!/usr/bin/env python3
"""Issue 28: what one tag per object costs when injected code asks for it (a JNI call per object)
against the same tag in the SampledObjectAlloc event, and what the tag map costs the collector.

Alternates, round after round, on bench/java/TagCost.java (small objects and int arrays, one in
KEEP_EVERY kept alive in a ring of RING slots):
  plain      no agent
  jni        a native call per object that does nothing (the floor agent with event=n,tag=n)
  jni+tag    a native call per object that tags it (event=n): a tag from injected code
  event      SampledObjectAlloc at interval 0, nothing in it (stack=n,tag=n)
  event+tag  the event, tagging the object (stack=n)
  weak       no agent: Java code keeps a WeakReference to each object beside its site, in the
             thread's own list swept of cleared references (an identity for live counts without
             the tag map), and counts the live objects per site at the end
and prints per mode the median ns per object and the collector's milliseconds, then the figures:
the tag's own cost on each path (jni+tag - jni, event+tag - event), the collector's time with
tags over without (jni+tag / jni), and the WeakReference's cost (weak - plain) with the
collector's time with them over without (weak / plain).

Usage: tag_cost_bench.py [--smoke] [--objects N] [--rounds R] [--json FILE]
Environment: FASTHPROF_FLOOR_AGENT, JAVA_HOME (or JAVA17_HOME)."""
import argparse
import atexit
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
FLOOR = os.environ["FASTHPROF_FLOOR_AGENT"]
JAVA_HOME = os.environ.get("JAVA_HOME") or os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
RING = 65536
KEEP_EVERY = 16
MODES = {
    "plain": (None, "plain"),
    "jni": ("event=n,tag=n", "native"),
    "jni+tag": ("event=n", "native"),
    "event": ("stack=n,tag=n", "plain"),
    "event+tag": ("stack=n", "plain"),
    "weak": (None, "weak"),
}
LIVE = re.compile(r"weak_list \d+ live (\d+) ")
FIGURE = re.compile(r"ns_per_object ([\d.]+) gc_ms (\d+) gcs (\d+)")


def run(work, mode, objects):
    agent, call = MODES[mode]
    command = [os.path.join(JAVA_HOME, "bin", "java"), "-Xmx512m", "-Xcheck:jni"]
    if agent is not None:
        command.append(f"-agentpath:{FLOOR}={agent}")
    command += ["-cp", str(work), "TagCost", str(objects), call, str(RING), str(KEEP_EVERY)]
    proc = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=1800)
    found = FIGURE.search(proc.stdout)
    if proc.returncode != 0 or found is None or "WARNING" in proc.stdout + proc.stderr:
        sys.exit(f"{mode}: {' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    if call == "weak":
        # The ring holds its last RING objects (one in KEEP_EVERY made): the list must count them.
        live = LIVE.search(proc.stdout)
        expected = min(RING, (objects + KEEP_EVERY - 1) // KEEP_EVERY)
        if live is None or int(live.group(1)) != expected:
            sys.exit(f"weak: the WeakReference list counted {live.group(1) if live else '?'} live objects, "
                     f"not the ring's {expected}:\n{proc.stdout}")
    return float(found.group(1)), int(found.group(2)), int(found.group(3))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="one short round (a check that it runs)")
    parser.add_argument("--objects", type=int, default=40_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    objects, rounds = (50_000, 1) if args.smoke else (args.objects, args.rounds)
    work = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-tagcost-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    subprocess.run([os.path.join(JAVA_HOME, "bin", "javac"), "-d", str(work), str(HERE / "java" / "TagCost.java")],
                   check=True)
    seen = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            seen[mode].append(run(work, mode, objects))
    print(f"TagCost: {objects} objects, one in {KEEP_EVERY} kept in a ring of {RING}; "
          f"medians of {rounds} alternating rounds ({JAVA_HOME})")
    medians = {}
    for mode, runs in seen.items():
        ns = statistics.median(r[0] for r in runs)
        gc = statistics.median(r[1] for r in runs)
        gcs = statistics.median(r[2] for r in runs)
        medians[mode] = (ns, gc)
        print(f"  {mode:10} {ns:8.1f} ns/object   collector {gc:6.0f} ms in {gcs:.0f} collections")
    figures = {
        "tag_by_jni_ns": medians["jni+tag"][0] - medians["jni"][0],
        "jni_call_ns": medians["jni"][0] - medians["plain"][0],
        "tag_in_event_ns": medians["event+tag"][0] - medians["event"][0],
        "event_ns": medians["event"][0] - medians["plain"][0],
        "collector_ratio": medians["jni+tag"][1] / max(1.0, medians["jni"][1]),
        "weak_reference_ns": medians["weak"][0] - medians["plain"][0],
        "weak_collector_ratio": medians["weak"][1] / max(1.0, medians["plain"][1]),
    }
    print(f"tag from a native call: {figures['tag_by_jni_ns']:.1f} ns/object (+ the call, "
          f"{figures['jni_call_ns']:.1f} ns); tag in the event: {figures['tag_in_event_ns']:.1f} ns/object (+ the event, "
          f"{figures['event_ns']:.1f} ns)")
    print(f"tag_cost.collector_ratio {figures['collector_ratio']:.2f} (the collector's time with every object "
          f"tagged over without)")
    print(f"a WeakReference per object, kept by Java code: {figures['weak_reference_ns']:.1f} ns/object; "
          f"tag_cost.weak_collector_ratio {figures['weak_collector_ratio']:.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
