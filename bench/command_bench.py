"""`fasthprof summary` (and `text`) on a large heap dump (bench/README.md "fasthprof summary"): MB/s of HPROF
bytes from the page cache and peak memory, side by side in one run with `hprof-verify` (the other
whole-file reader) and `cat` (the floor: reading the bytes), alternating, medians of --rounds runs.

The dump is bench/HeapBuilder.java's heap (the heap of heap_dump_bench.py) written by
`jcmd GC.heap_dump` (plain, and -gz=1 for the compressed figures), in FASTHPROF_BENCH_DIR.

  python3 bench/command_bench.py [--objects 16000000] [--heap 12g] [--rounds 5] [--smoke] [--json FILE]
Environment: FASTHPROF_COMMAND, FASTHPROF_VERIFY, JAVA17_HOME (set by meson), FASTHPROF_BENCH_DIR.
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
import time

import attach_sockets  # noqa: F401 (removes the attach sockets of JVMs it killed, at exit)

HERE = pathlib.Path(__file__).resolve().parent


def timed(command):
    """(wall seconds, peak RSS in MiB, CPU seconds: user + system) of one run of command, its output
    discarded. On a machine shared with other jobs the wall time includes waiting for a core: the
    CPU time is the figure that compares."""
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def make_dumps(java_home, objects, heap, folder):
    classes = folder / "classes"
    subprocess.run([os.path.join(java_home, "bin", "javac"), "--release", "17", "-d", str(classes),
                    str(HERE / "HeapBuilder.java")], check=True)
    proc = subprocess.Popen([os.path.join(java_home, "bin", "java"), f"-Xmx{heap}", "-XX:+UseParallelGC", "-cp",
                             str(classes), "HeapBuilder", str(objects)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"heap builder failed: {line}")
        jcmd = os.path.join(java_home, "bin", "jcmd")
        plain, compressed = folder / "heap.hprof", folder / "heap.hprof.gz"
        subprocess.run([jcmd, str(proc.pid), "GC.heap_dump", str(plain)], check=True, capture_output=True)
        subprocess.run([jcmd, str(proc.pid), "GC.heap_dump", "-gz=1", str(compressed)], check=True,
                       capture_output=True)
    finally:
        proc.kill()
        proc.wait()
    return plain, compressed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=16_000_000)
    parser.add_argument("--heap", default="12g")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.smoke:
        args.objects, args.heap, args.rounds = 200_000, "1g", 1
    command = os.environ["FASTHPROF_COMMAND"]
    verify = os.environ["FASTHPROF_VERIFY"]
    java_home = os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmdbench-", dir=base))
    result = {"objects": args.objects, "rounds": args.rounds}
    try:
        plain, compressed = make_dumps(java_home, args.objects, args.heap, folder)
        hprof_bytes = plain.stat().st_size
        result["hprof_bytes"] = hprof_bytes
        result["gz_bytes"] = compressed.stat().st_size
        print(f"dump: {args.objects} objects, {hprof_bytes / 1e6:.1f} MB (-gz=1: {compressed.stat().st_size / 1e6:.1f} MB)",
              flush=True)
        sides = {
            "cat": ["cat", str(plain)],
            "summary": [command, "summary", str(plain)],
            "text": [command, "text", str(plain)],
            "verify": [verify, str(plain)],
            "summary gz": [command, "summary", str(compressed)],
            "verify gz": [verify, str(compressed)],
        }
        for side in sides.values():  # into the page cache; each side once before it is timed
            timed(side)
        runs = {name: [] for name in sides}
        for round_number in range(args.rounds):
            order = list(sides) if round_number % 2 == 0 else list(reversed(sides))
            for name in order:
                runs[name].append(timed(sides[name]))
        for name, samples in runs.items():
            wall = statistics.median(s[0] for s in samples)
            peak = max(s[1] for s in samples)
            cpu = statistics.median(s[2] for s in samples)
            result[name] = {"seconds": wall, "mb_per_s": hprof_bytes / 1e6 / wall, "peak_rss_mib": peak,
                            "cpu_seconds": cpu, "mb_per_cpu_s": hprof_bytes / 1e6 / max(cpu, 1e-6)}
            print(f"{name:11s} median {wall:7.3f} s wall {hprof_bytes / 1e6 / wall:8.1f} MB/s, {cpu:7.3f} s CPU "
                  f"{hprof_bytes / 1e6 / max(cpu, 1e-6):8.1f} MB/s of HPROF; peak RSS {peak:8.1f} MiB", flush=True)
        print(f"CPU time: summary / verify {result['summary']['cpu_seconds'] / result['verify']['cpu_seconds']:.2f}, "
              f"gz: summary / verify {result['summary gz']['cpu_seconds'] / result['verify gz']['cpu_seconds']:.2f}", flush=True)
        print(f"summary / cat time {result['summary']['seconds'] / result['cat']['seconds']:.2f}, "
              f"summary / verify {result['summary']['seconds'] / result['verify']['seconds']:.2f}, "
              f"gz: summary / verify {result['summary gz']['seconds'] / result['verify gz']['seconds']:.2f}; "
              f"summary's peak RSS {result['summary']['peak_rss_mib'] / (hprof_bytes / 2**20):.3f} x the file "
              f"(mapped pages count)", flush=True)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
