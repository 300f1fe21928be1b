"""The two independent heap-dump readers, VisualVM's heap library (tests/visualvm/HeapCheck.java)
and the OpenJDK test library's HPROF parser (tests/openjdk-parser/OpenJdkHeapCheck.java), run
once for several dumps: each checker takes jobs `MODE FILE DUMP ...` and checks each dump as if
alone, in one JVM. A reader JVM's start-up and warm-up cost more than checking a small dump, and a
test reads every dump of its files, so one JVM per file (or per case) rather than one per dump.

heap_check(jobs) and parser_check(jobs) take [(mode, path, dump)] and return [(ok, output)], one
per job, in order; the output is that job's own lines, with the JVM's stderr when anything failed."""
import os
import re
import subprocess

from harness import check_no_warnings, java_bin, java_command

JAVA17 = os.environ["JAVA17_HOME"]
HEAP_CHECK = os.environ.get("HEAP_CHECK_CLASSES", "")
OPENJDK_CHECK = os.environ.get("OPENJDK_HEAP_CHECK_CLASSES", "")

VISUALVM_MISSING = "the VisualVM checker is not built: install `visualvm` (tools/install-deps.sh --tests)"
PARSER_MISSING = "the OpenJDK HPROF parser is not built (tools/fetch-openjdk-test-lib.sh, then meson setup --reconfigure)"


def visualvm_built():
    return bool(HEAP_CHECK) and os.path.isdir(HEAP_CHECK.split(":")[0])


def parser_built():
    return bool(OPENJDK_CHECK) and os.path.isfile(os.path.join(OPENJDK_CHECK, "OpenJdkHeapCheck.class"))


def _per_job(name, jobs, proc):
    """Splits a batched run's stdout at its "NAME job N:" lines. A job passed when its summary says
    0 failures (histogram, which has none, when the JVM exited 0); a JVM that died leaves the jobs
    after it without a summary, so they fail."""
    if len(jobs) == 1:
        parts = [proc.stdout]
    else:
        parts = re.split(rf"^{name} job \d+: .*\n", proc.stdout, flags=re.M)[1:]
        parts += [""] * (len(jobs) - len(parts))
    results = []
    for (mode, _, _), text in zip(jobs, parts):
        if mode == "histogram":
            ok = proc.returncode == 0
        else:
            ok = re.search(rf"^{name}: \d+ checks, 0 failures$", text, re.M) is not None and proc.returncode in (0, 1)
        results.append((ok, text if ok else text + proc.stderr))
    return results


def _arguments(jobs):
    return [str(item) for job in jobs for item in job]


def heap_check(jobs, *jvm_args, timeout=600):
    """VisualVM's heap library on every (mode, path, dump) of jobs, in one JDK 17 JVM with -Xcheck:jni
    (a WARNING line fails the test)."""
    if not jobs:
        return []
    if not visualvm_built():
        return [(False, VISUALVM_MISSING)] * len(jobs)
    proc = subprocess.run(java_command(JAVA17, *jvm_args, "-cp", HEAP_CHECK, "HeapCheck", *_arguments(jobs)),
                          capture_output=True, text=True, timeout=timeout)
    check_no_warnings(f"HeapCheck {' '.join(_arguments(jobs))}", proc.stdout, proc.stderr)
    return _per_job("HeapCheck", jobs, proc)


def parser_check(jobs, xmx="1g", timeout=600):
    """The OpenJDK test library's parser on every (mode, path, dump) of jobs, in one JDK 17 JVM. The
    parser itself prints WARNING lines for what it cannot read, which the checker counts as
    failures."""
    if not jobs:
        return []
    if not parser_built():
        return [(False, PARSER_MISSING)] * len(jobs)
    proc = subprocess.run([java_bin(JAVA17), f"-Xmx{xmx}", "-cp", OPENJDK_CHECK, "OpenJdkHeapCheck", *_arguments(jobs)],
                          capture_output=True, text=True, timeout=timeout)
    return _per_job("OpenJdkHeapCheck", jobs, proc)
