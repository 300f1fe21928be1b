"""Virtual threads (JDK 21+) never crash the agent: heap=all, cpu=samples and a dump on request
while thousands of virtual threads mount and unmount, in both formats; the binary file verifies.
A heap dump of parked (unmounted) virtual threads holds every object they keep only on their
stacks, as ROOT UNKNOWN (such a stack has no thread object in the dump), in both formats.
Runs on the JDK 25 under test only (JDK 17 has no virtual threads): without it the test exits 77,
which Meson reports as SKIP."""
import os
import re
import signal
import subprocess
import tempfile

import heap_model
from harness import agentpath, check, cleanup, finish, java_bin, java_process, jdk25, verify_binary, wait_for

SOURCES = [os.path.join(os.environ.get("SOURCE_ROOT", "."), "tests", "java21", name)
           for name in ("VirtualThreads.java", "VirtualRoots.java")]
HELD = 50


def parked_roots(label, home, classes):
    """Dumps while HELD virtual threads are parked, each holding one VirtualRoots$Held."""
    for fmt, name in (("b", "roots.hprof"), ("a", "roots.txt")):
        with java_process(home, agentpath(f"heap=dump,format={fmt},file={name},doe=n,dumper=jvmti"), "VirtualRoots",
                          [str(HELD), "30"], classpath=classes) as (proc, folder):
            stdout, stderr = folder / "stdout.txt", folder / "stderr.txt"
            if not check(wait_for(lambda: "ready" in stdout.read_text(), 60), f"{label} parked format={fmt}: ready"):
                continue
            os.kill(proc.pid, signal.SIGQUIT)
            check(wait_for(lambda: "done." in stderr.read_text(), 60), f"{label} parked format={fmt}: a dump")
            proc.kill()
            proc.wait()
            if fmt == "b":
                ok, output = verify_binary(folder / name)
                check(ok, f"{label} parked: the dump verifies:\n{output[-2000:]}")
                model = heap_model.read(folder / name, 0)
                held = [oid for oid, (cid, _) in model.instances.items()
                        if model.classes[cid].name == "VirtualRoots$Held"]
                unknown = {oid for kind, oid in model.roots if kind == 0xFF}
                values = sorted(model.fields_of(oid)["n"] for oid in held)
                check(values == list(range(HELD)), f"{label} parked: every held object, once ({len(held)})")
                check(all(oid in unknown for oid in held), f"{label} parked: each is a ROOT UNKNOWN "
                      f"({sum(oid in unknown for oid in held)} of {len(held)})")
            else:
                body = (folder / name).read_text()
                held = re.findall(r"^OBJ (\w+) \(sz=\d+, trace=\d+, class=VirtualRoots\$Held@\w+\)$", body, re.M)
                unknown = set(re.findall(r"^ROOT (\w+) \(kind=<unknown>\)$", body, re.M))
                check(len(held) == HELD, f"{label} parked format=a: {HELD} OBJ lines of Held ({len(held)})")
                check(all(oid in unknown for oid in held), f"{label} parked format=a: each has a ROOT <unknown> line")
                check(body.count("HEAP DUMP END") == 1, f"{label} parked format=a: one complete dump")


for label, home in [jdk25()]:
    classes = tempfile.mkdtemp(prefix="fasthprof-vt-")
    compiled = subprocess.run([java_bin(home, "javac"), "-d", classes, *SOURCES], capture_output=True, text=True)
    if not check(compiled.returncode == 0, f"{label}: VirtualThreads compiles\n{compiled.stderr}"):
        continue
    for fmt, name in (("b", "vt.hprof"), ("a", "vt.txt")):
        with java_process(home, agentpath(f"heap=all,cpu=samples,thread=y,format={fmt},file={name}"),
                          "VirtualThreads", classpath=classes) as (proc, folder):
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
    parked_roots(label, home, classes)
    cleanup(classes)

finish("virtual_threads")
