"""Allocation sites in mark words (agent/sites/object_marks): the test agent built from the agent's
objects (tests/object_marks/object_marks_agent.cpp) hands the mark layout it reads from the VM to
ObjectMarks.java, which writes IDs into marks, keeps a known part of the objects (some held locked
in each way a mark is displaced), runs young and full collections and compares the agent's walk
(after a forced full collection) with what it kept, count by count: exact, or it exits 1. Every JVM
runs with -Xcheck:jni and no line of its output may contain WARNING (harness.run_java).

Cases: collectors (G1, Parallel, Serial on JDK 17 and 25), locking (JDK 25's legacy stack locks,
monitors only and the monitor table; JDK 17's heavy monitors; no compressed class pointers: arrays'
length at 16; the interpreter alone), unusable (what the layout says with compact headers, biased locking, ZGC, Shenandoah),
timed (3 million marked objects: the walk's time, printed)."""
import os
import re

from harness import check, jdk25, jdks, run_cases, run_java

AGENT = os.environ["FASTHPROF_OBJECT_MARKS_AGENT"]
CLASSES = os.environ["OBJECT_MARKS_CLASSES"]
EXPORTS = ["--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"]


def run_marks(label, home, flags, args=(), timeout=180):
    name = f"{label} {' '.join(flags)}"
    run = run_java(home, f"-agentpath:{AGENT}", main="ObjectMarks", args=list(args),
                   jvm_args=["-Xmx2g", *EXPORTS, *flags], classpath=CLASSES, timeout=timeout)
    walked = re.search(r"^object_marks: walked .*$", run.stdout, re.M)
    print(f"{name}: {walked.group(0) if walked else run.stdout.strip().splitlines()[-1:]}", flush=True)
    return name, run


def expect_exact(label, home, flags, args=()):
    name, run = run_marks(label, home, flags, args)
    check(run.code == 0 and "ObjectMarks: OK" in run.stdout, f"{name}: the walk's counts equal what was kept", run)
    check("unusable" not in run.stdout, f"{name}: the layout is usable", run)
    return run


def expect_unusable(label, home, flags, reason):
    name, run = run_marks(label, home, flags)
    line = f"ObjectMarks: layout unusable: {reason}"
    check(run.code == 0 and line in run.stdout, f"{name}: the layout says: {line}", run)


def collectors():
    for label, home in jdks():
        for collector in ("-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseSerialGC"):
            expect_exact(label, home, [collector])


def locking():
    label, home = jdk25()
    expect_exact(label, home, ["-XX:LockingMode=1"])
    expect_exact(label, home, ["-XX:LockingMode=0", "-XX:+UseSerialGC"])
    expect_exact(label, home, ["-XX:+UnlockDiagnosticVMOptions", "-XX:+UseObjectMonitorTable", "-XX:+UseParallelGC"])
    for label, home in jdks():
        run = expect_exact(label, home, ["-XX:-UseCompressedClassPointers", "-XX:+UseSerialGC"])
        check("length_offset=16" in run.stdout, f"{label}: without compressed class pointers an array's length is at 16", run)
    label, home = jdks()[0]
    expect_exact(label, home, ["-XX:+UnlockExperimentalVMOptions", "-XX:+UseHeavyMonitors"])
    # Locks in interpreted frames only (and every local kept to its frame's end).
    for label, home in jdks():
        expect_exact(label, home, ["-Xint"], args=["2000"])


def unusable():
    for label, home in jdks():
        expect_unusable(label, home, ["-XX:+UseZGC"], "ZGC (marks are walked under the Serial, Parallel and G1 collectors only)")
        expect_unusable(label, home, ["-XX:+UseShenandoahGC"],
                        "Shenandoah (marks are walked under the Serial, Parallel and G1 collectors only)")
    label, home = jdks()[0]
    expect_unusable(label, home, ["-XX:+UseBiasedLocking"], "-XX:+UseBiasedLocking (a biased mark holds a thread in its upper bits)")
    label, home = jdk25()
    expect_unusable(label, home, ["-XX:+UseCompactObjectHeaders"],
                    "-XX:+UseCompactObjectHeaders (the mark's upper bits hold the class)")


def timed():
    for label, home in jdks():
        for collector in ("-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseSerialGC"):
            expect_exact(label, home, [collector], args=["20000", "3000000"])


run_cases("object_marks", {"collectors": collectors, "locking": locking, "unusable": unusable, "timed": timed})
