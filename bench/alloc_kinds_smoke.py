#!/usr/bin/env python3
"""Smoke test of bench/liballockinds.so (bench/README.md "Which allocations bytecode injection
sees"): a program makes known numbers of allocations of each kind, kept reachable so that the JIT
cannot remove them, and the agent's lines must count at least that many per kind: 30 000 `new`,
20 000 `newarray`, 10 000 `anewarray`, and 5 000 `clone()` of an int[] (a native method while
interpreted, a call once compiled, seen by VMObjectAlloc only in the first case).
Usage: alloc_kinds_smoke.py AGENT (JAVA17_HOME or JAVA_HOME picks the JDK)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

PROGRAM = """
public class Kinds {
    static Object[] kept = new Object[70_000];
    public static void main(String[] args) {
        int at = 0;
        int[] model = new int[4];
        for (int i = 0; i < 30_000; i++) kept[at++] = new StringBuilder();
        for (int i = 0; i < 20_000; i++) kept[at++] = new long[3];
        for (int i = 0; i < 10_000; i++) kept[at++] = new String[2];
        for (int i = 0; i < 5_000; i++) kept[at++] = model.clone();
        System.out.println("kept " + at);
    }
}
"""
LINE = re.compile(r"^alloc_kinds: (new|newarray|anewarray|multianewarray|call|native|other|no frame)\s+(\d+) objects",
                  re.M)


def main():
    agent = sys.argv[1]
    home = os.environ.get("JAVA17_HOME") or os.environ.get("JAVA_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
    with tempfile.TemporaryDirectory(prefix="fasthprof-allockinds-") as work:
        source = pathlib.Path(work) / "Kinds.java"
        source.write_text(PROGRAM)
        subprocess.run([f"{home}/bin/javac", "-d", work, str(source)], check=True)
        run = subprocess.run([f"{home}/bin/java", "-Xcheck:jni", f"-agentpath:{agent}", "-cp", work, "Kinds"],
                             capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    print(output)
    if run.returncode != 0 or "kept 65000" not in run.stdout:
        sys.exit(f"alloc_kinds_smoke: the program failed (exit {run.returncode})")
    if "WARNING" in output:
        sys.exit("alloc_kinds_smoke: a WARNING line under -Xcheck:jni")
    counts = {kind: int(number) for kind, number in LINE.findall(output)}
    wanted = {"new": 30_000, "newarray": 20_000, "anewarray": 10_000}
    short = [f"{kind} {counts.get(kind, 0)} < {least}" for kind, least in wanted.items() if counts.get(kind, 0) < least]
    clones = counts.get("native", 0) + counts.get("call", 0)
    if clones < 5_000:
        short.append(f"native + call {clones} < 5000 (the clones)")
    vm_events = re.search(r"^alloc_kinds: VMObjectAlloc events (\d+) objects", output, re.M)
    if vm_events is None:
        short.append("no VMObjectAlloc line")
    if short:
        sys.exit("alloc_kinds_smoke: " + "; ".join(short))
    print("alloc_kinds_smoke: every kind counted")


if __name__ == "__main__":
    main()
