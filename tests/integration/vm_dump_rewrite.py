"""VM dumps (issue 14): heap dumps written by HotSpot's own dumper (`jcmd <pid> GC.heap_dump`) go
through runtime/vm_dump/vm_dump_rewriter, driven by the vm_dump_rewrite test program, into a fasthprof-like
file: fasthprof's header (its writer's), then the first JDK dump twice in a row and the second one
(taken after a full GC, so that objects and class mirrors may have moved). The file must pass
hprof-verify --strict, and every dump in it must hold, class by class, as many instances and arrays
as the JDK's own file (counted by hprof_records.py); VisualVM's heap library must read each dump and
find HeapShapes' objects as they are, and the OpenJDK test library's parser must read each dump.
On JDK 17 and, when installed, JDK 25."""
import os
import subprocess

from harness import check, finish, java_bin, java_process, jdks, verify_binary, wait_for
import hprof_records
from readers import heap_check, parser_built, parser_check, visualvm_built

REWRITE = os.environ["FASTHPROF_VM_DUMP_REWRITE"]


def readers(label, path, dumps):
    """VisualVM's heap library (HeapCheck shapes) and the OpenJDK parser (read) on every dump, one
    JVM each for the whole file (readers.py)."""
    if visualvm_built():
        for dump, (ok, output) in enumerate(heap_check([("shapes", path, dump) for dump in range(dumps)], timeout=300)):
            check(ok, f"{label}: VisualVM reads dump {dump + 1} with HeapShapes' objects as they are\n" + output[-2000:])
    else:
        print("SKIP: the VisualVM checker is not built (install `visualvm`)", flush=True)
    if parser_built():
        for dump, (ok, output) in enumerate(parser_check([("read", path, dump) for dump in range(dumps)], timeout=300)):
            check(ok, f"{label}: the OpenJDK parser reads dump {dump + 1}\n" + output[-2000:])
    else:
        print("SKIP: the OpenJDK parser checker is not built (tools/fetch-openjdk-test-lib.sh)", flush=True)


def jdk_dump(home, pid, path):
    result = subprocess.run([java_bin(home, "jcmd"), str(pid), "GC.heap_dump", str(path)],
                            capture_output=True, text=True, timeout=300)
    return result.returncode == 0 and path.exists(), result.stdout + result.stderr


def counts(path):
    _, _, _, records = hprof_records.read(path)
    return hprof_records.class_counts_per_dump(records)


def bodies(path):
    """(tag, body) of every record: the header's time stamps differ from run to run."""
    _, _, _, records = hprof_records.read(path)
    return [(r.tag, bytes(r.body)) for r in records]


def run(label, home):
    with java_process(home, None, "HeapShapes", ["120", "2"]) as (proc, folder):
        check(wait_for(lambda: "ready" in (folder / "stdout.txt").read_text(), 60), f"{label}: HeapShapes is ready")
        first, second = folder / "first.hprof", folder / "second.hprof"
        ok, output = jdk_dump(home, proc.pid, first)
        check(ok, f"{label}: jcmd GC.heap_dump writes the first dump\n{output}")
        ok, output = jdk_dump(home, proc.pid, second)
        check(ok, f"{label}: jcmd GC.heap_dump writes the second dump\n{output}")
        proc.kill()
        if not first.exists() or not second.exists():
            return
        out = folder / "vm.hprof"
        rewrite = subprocess.run([REWRITE, str(out), str(first), str(first), str(second)],
                                 capture_output=True, text=True, timeout=600)
        if not check(rewrite.returncode == 0, f"{label}: the rewriter takes the JDK's dumps\n{rewrite.stdout}{rewrite.stderr}"):
            return
        print(rewrite.stdout, end="", flush=True)
        lines = rewrite.stdout.splitlines()
        check(len(lines) == 3 and all("utf8-dropped 0 " not in line for line in lines[1:]),
              f"{label}: the later dumps drop the symbols the first one wrote\n{rewrite.stdout}")
        ok, summary = verify_binary(out, "--classes")
        check(ok and "heap dumps: 3" in summary, f"{label}: hprof-verify --strict accepts the file\n{summary[-3000:]}")
        ok, _ = verify_binary(first, strict=False)
        check(ok, f"{label}: the JDK's own file verifies (without --strict)")

        expected = counts(first) + counts(first) + counts(second)
        got = counts(out)
        check(len(got) == 3, f"{label}: three dumps in the rewritten file, found {len(got)}")
        for index, (want, have) in enumerate(zip(expected, got)):
            differing = sorted(name for name in set(want) | set(have) if want.get(name) != have.get(name))
            check(not differing, f"{label}: dump {index + 1} has the JDK's count for every class; differing: "
                  + ", ".join(f"{name} {want.get(name)} -> {have.get(name)}" for name in differing[:10]))
            check(want.get("HeapShapes$Leaf", 0) > 0, f"{label}: dump {index + 1} holds HeapShapes' objects")
        readers(label, out, 3)
        # The same driver with one chunk size for the whole stream: byte for byte the same file.
        again = folder / "again.hprof"
        rerun = subprocess.run([REWRITE, "--chunk", "65536", str(again), str(first), str(first), str(second)],
                               capture_output=True, text=True, timeout=600)
        same = rerun.returncode == 0 and bodies(again) == bodies(out)
        check(same, f"{label}: the output does not depend on how the input is split\n{rerun.stderr}")


for label, home in jdks():
    run(label, home)
finish("vm_dump_rewrite")
