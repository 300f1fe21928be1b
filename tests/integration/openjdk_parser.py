"""Binary heap dumps read by a second independent reader: the OpenJDK test library's HPROF parser
(jdk.test.lib.hprof, which the JDK's own heap-dump tests use), through
tests/openjdk-parser/OpenJdkHeapCheck.java. heap=dump and heap=all, format=b, on JDK 17 and 25 with
-Xcheck:jni: the dump on kill -QUIT must show the known heap of tests/java/HeapShapes.java (counts,
field values, references, array lengths, roots, threads; with heap=all the allocation sites), and
the dump at exit must read without a complaint (dumps of the walk, dumper=jvmti; tests/integration/vm_dump.py
reads the JVM's own dumps with it). A truncated copy must be refused, so that a parser
that stopped complaining would be noticed.

The parser's sources come from Debian's openjdk-17 source package (tools/fetch-openjdk-test-lib.sh,
run by tools/install-deps.sh --tests); without them this test is skipped (exit 77) and says so.
"""
import os
import signal

from harness import agentpath, check, finish, java_process, jdks, read_text, terminate, wait_for
from readers import parser_built, parser_check


def dumps_done(folder):
    """Dumps whose bytes are in the file: the agent's verbose line ends with " done." then."""
    return read_text(folder / "stderr.txt").count(" done.\n")


def run(jdk, home, heap):
    label = f"{jdk} heap={heap}"
    with java_process(home, agentpath(f"heap={heap},format=b,file=dump.hprof,dumper=jvmti"), "HeapShapes",
                      ["60"]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60),
                     f"{label}: program ready:\n{read_text(folder / 'stderr.txt')}"):
            return
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: dumps_done(folder) >= 1, 60), f"{label}: kill -QUIT gives a dump")
        code = terminate(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{read_text(folder / 'stderr.txt')}")
        # -Xcheck:jni writes its warnings ("WARNING: JNI local refs: 441, exceeds capacity: 32") to stdout.
        said = read_text(folder / "stdout.txt") + read_text(folder / "stderr.txt")
        check(not any(bad in said for bad in ("HPROF ERROR", "FATAL ERROR", "WARNING")),
              f"{label}: neither the agent nor -Xcheck:jni complains:\n{said[-3000:]}")

        # The first half of the file: the parser must complain (here: "Unexpected EOF").
        truncated = folder / "truncated.hprof"
        with open(dump, "rb") as whole, open(truncated, "wb") as part:
            part.write(whole.read(dump.stat().st_size // 4))
        # One parser JVM for the three (readers.py): each is read as if alone.
        results = parser_check([("alloc" if heap == "all" else "shapes", dump, 0), ("read", dump, 1),
                                ("read", truncated, 0)])
        ok, output = results[0]
        check(ok, f"{label}: the OpenJDK parser reads the dump and finds the known heap:\n{output[-4000:]}")
        print(f"{label}: dump 0: " + " ".join(line for line in output.splitlines()
                                             if line.startswith(("OpenJdkHeapCheck:", "objects:", "roots by type:"))))
        ok, output = results[1]
        check(ok, f"{label}: the OpenJDK parser reads the dump at exit:\n{output[-4000:]}")
        ok, output = results[2]
        check(not ok and "FAIL: the parser" in output, f"{label}: a truncated copy is refused:\n{output[-2000:]}")


if not parser_built():
    print("SKIP: the OpenJDK HPROF parser is not built: its sources come from Debian's openjdk-17 source "
          "package (run tools/fetch-openjdk-test-lib.sh, then meson setup --reconfigure)")
    raise SystemExit(77)

# heap=all writes everything heap=dump does and the allocation sites besides: JDK 17 runs both, a
# later JDK (whose class and thread records differ) the fuller one, which keeps the run short.
for jdk, home in jdks():
    for heap in ("dump", "all") if jdk == "jdk17" else ("all",):
        run(jdk, home, heap)
finish("openjdk_parser")
