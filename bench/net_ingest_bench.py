"""Collector ingest (issue 17): 8 agents streaming heap dumps at once to one `fasthprof listen`
against the same 8 agents writing the same dumps to local files, alternating in one run.

Each round starts 8 JVMs (LiveHeap: a fixed heap of int arrays each, -Xmx sized so that 8 fit in
memory), waits until all are ready, sends kill -QUIT to all eight at once and times until every
one has printed `Dumping Java heap ... done.` (heap=dump, format=b, dumper=jvmti on both sides:
the agent's own walk, so that what differs is only where the bytes go). The bytes are the dumps'
(each output's size after the report minus its size before). Aggregate MB/s = bytes / wall.

Usage: net_ingest_bench.py [--agents 8] [--megabytes 64] [--rounds 3] [--smoke]
Environment: FASTHPROF_AGENT, FASTHPROF_COMMAND, JAVA17_HOME, TEST_CLASSES (tests/meson.build)."""
import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

AGENT = os.environ["FASTHPROF_AGENT"]
COMMAND = os.environ["FASTHPROF_COMMAND"]
JAVA = os.path.join(os.environ["JAVA17_HOME"], "bin", "java")
CLASSES = os.environ["TEST_CLASSES"]


def sizes(paths):
    return sum(p.stat().st_size if p.exists() else 0 for p in paths)


def run_round(mode, agents, megabytes, folder):
    folder.mkdir(parents=True)
    listen = None
    if mode == "net":
        listen = subprocess.Popen([COMMAND, "listen", "--port", "0", "--dir", str(folder), "--stay"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(re.search(r":(\d+)$", listen.stdout.readline().strip()).group(1))
        target = f"net=127.0.0.1:{port}"
    jvms = []
    for i in range(agents):
        work = folder / f"jvm{i}"
        work.mkdir()
        out = "" if mode == "net" else f"file={work / 'out.hprof'},"
        options = f"heap=dump,format=b,dumper=jvmti,doe=n,{out}{target if mode == 'net' else ''}".rstrip(",")
        err = open(work / "stderr.txt", "w")
        proc = subprocess.Popen([JAVA, f"-Xmx{megabytes * 3}m", f"-agentpath:{AGENT}={options}", "-cp", CLASSES,
                                 "LiveHeap", str(megabytes), "600"], cwd=work, stdout=subprocess.PIPE,
                                stderr=err, text=True)
        jvms.append((proc, work, err))
    for proc, _, _ in jvms:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit("a JVM did not start")
    outputs = list(folder.glob("*.hprof")) if mode == "net" else [w / "out.hprof" for _, w, _ in jvms]
    if mode == "net":
        deadline = time.time() + 30
        while len(list(folder.glob("*.hprof"))) < agents and time.time() < deadline:
            time.sleep(0.05)
        outputs = list(folder.glob("*.hprof"))
    time.sleep(0.5)
    before = sizes(outputs)
    start = time.perf_counter()
    for proc, _, _ in jvms:
        proc.send_signal(signal.SIGQUIT)
    pending = {id(p) for p, _, _ in jvms}
    while pending:
        for proc, work, _ in jvms:
            if id(proc) in pending and "Dumping Java heap ... done." in (work / "stderr.txt").read_text():
                pending.discard(id(proc))
        time.sleep(0.005)
    wall = time.perf_counter() - start
    if mode == "net":
        time.sleep(0.5)  # the collector's last reads
    dumped = sizes(outputs) - before
    for proc, _, err in jvms:
        proc.kill()
        proc.wait()
        err.close()
    if listen:
        listen.stdin.write("quit\n")
        listen.stdin.flush()
        listen.wait(timeout=60)
    shutil.rmtree(folder, ignore_errors=True)
    return dumped, wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.agents, args.megabytes, args.rounds = 2, 4, 1
    base = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-ingest-", dir=os.environ.get("FASTHPROF_BENCH_DIR")))
    results = {"net": [], "file": []}
    for r in range(args.rounds):
        for mode in (("net", "file") if r % 2 == 0 else ("file", "net")):
            dumped, wall = run_round(mode, args.agents, args.megabytes, base / f"{mode}{r}")
            results[mode].append((dumped, wall))
            print(f"round {r} {mode:4}: {args.agents} dumps, {dumped / 1e6:8.1f} MB in {wall:6.2f} s: "
                  f"{dumped / 1e6 / wall:7.1f} MB/s aggregate", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    for mode in ("net", "file"):
        rates = sorted(d / 1e6 / w for d, w in results[mode])
        print(f"{mode:4}: median {rates[len(rates) // 2]:.1f} MB/s (rounds {', '.join(f'{x:.1f}' for x in rates)})")
    ratios = sorted((n[0] / n[1]) / (f[0] / f[1]) for n, f in zip(results["net"], results["file"]))
    print(f"net / file: median {ratios[len(ratios) // 2]:.2f} (per round {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
