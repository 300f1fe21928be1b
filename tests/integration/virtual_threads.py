"""Virtual threads (JDK 21+) never crash the agent: heap=all, cpu=samples and a dump on request
while thousands of virtual threads mount and unmount, in both formats; the binary file verifies.
Runs on the JDK 25 under test only (JDK 17 has no virtual threads)."""
import os
import signal
import subprocess
import tempfile

import harness
from harness import agentpath, check, cleanup, finish, java_bin, jdks, start_java, verify_binary, wait_for

SOURCE = os.path.join(os.environ.get("SOURCE_ROOT", "."), "tests", "java21", "VirtualThreads.java")

for label, home in jdks():
    if label == "jdk17":
        continue
    classes = tempfile.mkdtemp(prefix="fasthprof-vt-")
    compiled = subprocess.run([java_bin(home, "javac"), "-d", classes, SOURCE], capture_output=True, text=True)
    if not check(compiled.returncode == 0, f"{label}: VirtualThreads compiles\n{compiled.stderr}"):
        continue
    for fmt, name in (("b", "vt.hprof"), ("a", "vt.txt")):
        saved = harness.TEST_CLASSES
        harness.TEST_CLASSES = classes
        proc, folder = start_java(home, agentpath(f"heap=all,cpu=samples,thread=y,format={fmt},file={name}"),
                                  "VirtualThreads")
        harness.TEST_CLASSES = saved
        try:
            stdout = folder / "stdout.txt"
            check(wait_for(lambda: "submitted" in stdout.read_text(), 60), f"{label} format={fmt}: started")
            os.kill(proc.pid, signal.SIGQUIT)
            code = proc.wait(timeout=180)
            stderr = (folder / "stderr.txt").read_text()
            check(code == 0 and "virtual threads done 4000" in stdout.read_text(),
                  f"{label} format={fmt}: the program finishes (exit {code}):\n{stderr[-2000:]}")
            check(stderr.count("done.") == 2, f"{label} format={fmt}: a report on request and at exit")
            check("HPROF ERROR" not in stderr, f"{label} format={fmt}: no error:\n{stderr[-2000:]}")
            if fmt == "b":
                ok, output = verify_binary(folder / name)
                check(ok and "heap dumps: 2" in output, f"{label}: both dumps verify:\n{output[-2000:]}")
            else:
                text = (folder / name).read_text()
                check(text.count("HEAP DUMP END") == 2 and text.count("SITES END") == 2
                      and text.count("CPU SAMPLES END") == 2, f"{label}: every text section twice")
        finally:
            if proc.poll() is None:
                proc.kill()
            cleanup(folder)
    cleanup(classes)

finish("virtual_threads")
