"""Binary heap dumps read by a second independent reader: the OpenJDK test library's HPROF parser
(jdk.test.lib.hprof, which the JDK's own heap-dump tests use), through
tests/openjdk-parser/OpenJdkHeapCheck.java. heap=dump and heap=all, format=b, on JDK 17 and 25 with
-Xcheck:jni: the dump on kill -QUIT must show the known heap of tests/java/HeapShapes.java (counts,
field values, references, array lengths, roots, threads; with heap=all the allocation sites), and
the dump at exit must read without a complaint. A truncated copy must be refused, so that a parser
that stopped complaining would be noticed.

The parser's sources come from Debian's openjdk-17 source package (tools/fetch-openjdk-test-lib.sh,
run by tools/install-deps.sh); without them this test is skipped (exit 77) and says so.
"""
import os
import pathlib
import re
import signal
import subprocess
import tempfile

from harness import TEST_CLASSES, agentpath, check, cleanup, finish, java_bin, jdks, wait_for

CHECK_CLASSES = os.environ.get("OPENJDK_HEAP_CHECK_CLASSES", "")
JAVA17 = os.environ["JAVA17_HOME"]


def start(home, options, jvm_args):
    """Runs HeapShapes (alive for 60 s) with the agent in a scratch folder; returns (Popen, folder)."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-openjdk-"))
    env = {k: v for k, v in os.environ.items() if k not in ("_JAVA_HPROF_OPTIONS", "JAVA_TOOL_OPTIONS")}
    command = [java_bin(home), *jvm_args, agentpath(options), "-cp", TEST_CLASSES, "HeapShapes", "60"]
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        return subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=err), folder


def text(path):
    return path.read_text(errors="replace") if path.exists() else ""


def dumps_done(folder):
    """Dumps whose bytes are in the file: the agent's verbose line ends with " done." then."""
    return text(folder / "stderr.txt").count(" done.\n")


def stop(proc):
    """SIGTERM: an orderly shutdown, with the dump at exit. Returns the exit code (None: killed)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def parser_check(mode, path, dump):
    """Runs OpenJdkHeapCheck; returns (ok, output)."""
    proc = subprocess.run([java_bin(JAVA17), "-Xmx1g", "-cp", CHECK_CLASSES, "OpenJdkHeapCheck", mode, str(path),
                           str(dump)], capture_output=True, text=True, timeout=300)
    return proc.returncode == 0, proc.stdout + proc.stderr


def run(jdk, home, heap):
    label = f"{jdk} heap={heap}"
    proc, folder = start(home, f"heap={heap},format=b,file=dump.hprof", ["-Xcheck:jni"])
    try:
        dump = folder / "dump.hprof"
        if not check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60),
                     f"{label}: program ready:\n{text(folder / 'stderr.txt')}"):
            return
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: dumps_done(folder) >= 1, 60), f"{label}: kill -QUIT gives a dump")
        code = stop(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{text(folder / 'stderr.txt')}")
        # -Xcheck:jni writes its warnings ("WARNING: JNI local refs: 441, exceeds capacity: 32") to stdout.
        said = text(folder / "stdout.txt") + text(folder / "stderr.txt")
        check(not any(bad in said for bad in ("HPROF ERROR", "FATAL ERROR", "WARNING")),
              f"{label}: neither the agent nor -Xcheck:jni complains:\n{said[-3000:]}")

        ok, output = parser_check("alloc" if heap == "all" else "shapes", dump, 0)
        check(ok, f"{label}: the OpenJDK parser reads the dump and finds the known heap:\n{output[-4000:]}")
        print(f"{label}: dump 0: " + " ".join(line for line in output.splitlines()
                                             if line.startswith(("OpenJdkHeapCheck:", "objects:", "roots by type:"))))
        ok, output = parser_check("read", dump, 1)
        check(ok, f"{label}: the OpenJDK parser reads the dump at exit:\n{output[-4000:]}")

        # The first half of the file: the parser must complain (here: "Unexpected EOF").
        truncated = folder / "truncated.hprof"
        with open(dump, "rb") as whole, open(truncated, "wb") as part:
            part.write(whole.read(dump.stat().st_size // 4))
        ok, output = parser_check("read", truncated, 0)
        check(not ok and "FAIL: the parser" in output, f"{label}: a truncated copy is refused:\n{output[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


if not CHECK_CLASSES or not os.path.isfile(os.path.join(CHECK_CLASSES, "OpenJdkHeapCheck.class")):
    print("SKIP: the OpenJDK HPROF parser is not built: its sources come from Debian's openjdk-17 source "
          "package (run tools/fetch-openjdk-test-lib.sh, then meson setup --reconfigure)")
    raise SystemExit(77)

for jdk, home in jdks():
    for heap in ("dump", "all"):
        run(jdk, home, heap)
finish("openjdk_parser")
