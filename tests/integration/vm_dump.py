"""dumper=vm|jvmti: binary heap dumps written by HotSpot's own dumper (the one `jcmd
GC.heap_dump` runs) through the attach socket inside fasthprof's output (what dumper=auto does
when a dump by fork cannot be made, fork_dump.py), on JDK 17 and 25 with G1 and ZGC:

- dumper=vm: a dump on kill -QUIT and one at exit, both by the JVM's dumper (at exit with ZGC on JDK 25
  by the walk: the JVM has stopped its collector's threads by then), each read by hprof-verify
  --strict, VisualVM's heap library and the OpenJDK test-library parser, with per-class instance
  counts equal to `jcmd GC.heap_dump` of the same quiescent heap;
- dumper=vm+jvmti: one file holding a VM dump, a walk and a VM dump in turn, every one read by the
  three readers;
- many classes: several dumps of a program with 20 000 classes, so that the JDK's class serials
  pass 100 000 (on JDK 17; JDK 25 numbers them from 1 in every dump);
- net=: the VM dump sent to a peer;
- a file size limit reached during a VM dump: one message, the file cut back, no pipe or side file
  left, the next dump works;
- -XX:+DisableAttachMechanism (the walk, no thread dump on stdout, one report per request) and -Xrs
  (the socket exists from the start: the VM's dumper at exit, without a signal);
- --limit-modules java.base.

Each case is a Meson test of its own (`vm_dump.py <case>`, suite vm_dump).
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import threading
import time

import heap_model
import hprof_records
from readers import heap_check, parser_check
from harness import (prlimit_fsize, TEST_CLASSES, agentpath, check, java_bin, java_process, jdks, read_text,
                     run_cases, skip, terminate, verify_binary, wait_for)

# The verbose line; verbose=y's figures line lands inside it, as for the walk.
DUMP_LINE = re.compile(r"^Dumping Java heap \.\.\. done\.\n", re.M)
VM_LINE = re.compile(r"fasthprof: heap dump: (dumper=[a-z+]+): (the JVM's own dumper|the JVMTI walk)([^\n]*)")


def dumps_done(folder):
    return read_text(folder / "stderr.txt").count(" done.\n")


def dumpers(folder):
    """[(dumper= as asked, 'vm' or 'jvmti', the reason)] in report order, from the verbose lines."""
    return [(asked, "vm" if who == "the JVM's own dumper" else "jvmti", why)
            for asked, who, why in VM_LINE.findall(read_text(folder / "stderr.txt"))]


def ready(proc, folder, label, timeout=60):
    ok = wait_for(lambda: "ready" in read_text(folder / "stdout.txt") or proc.poll() is not None, timeout)
    return check(ok and proc.poll() is None, f"{label}: program ready:\n{read_text(folder / 'stderr.txt')[-3000:]}")


def quit_and_wait(proc, folder, count, timeout=120):
    os.kill(proc.pid, signal.SIGQUIT)
    return wait_for(lambda: dumps_done(folder) >= count, timeout)


def leftovers(folder):
    """Pipes and side files of the agent's, and attach triggers of this process's, still on disk."""
    found = [p.name for p in folder.iterdir() if p.name.startswith(".fasthprof-")]
    found += [p for p in os.listdir("/tmp") if p.startswith(".attach_pid")]
    return found


def readers_accept(label, path, dumps, shapes=(), read=None):
    """hprof-verify --strict on the file (it must count `dumps` heap dumps), then VisualVM's library
    and the OpenJDK parser on every dump, or on those listed in read (one JVM each for the whole
    file, readers.py): the known heap of HeapShapes in the dumps listed in shapes, a generic read of
    the others."""
    ok, output = verify_binary(path)
    check(ok and f"heap dumps: {dumps}" in output, f"{label}: hprof-verify --strict accepts {dumps} dumps:\n"
          f"{output[-3000:]}")
    chosen = list(range(dumps)) if read is None else [dump for dump in read if dump < dumps]
    visualvm = heap_check([("shapes" if dump in shapes else "generic", path, dump) for dump in chosen])
    parser = parser_check([("shapes" if dump in shapes else "read", path, dump) for dump in chosen], xmx="2g")
    for dump, (ok_visualvm, said_visualvm), (ok_parser, said_parser) in zip(chosen, visualvm, parser):
        check(ok_visualvm, f"{label}: VisualVM's library reads dump {dump}:\n{said_visualvm[-3000:]}")
        check(ok_parser, f"{label}: the OpenJDK parser reads dump {dump}:\n{said_parser[-3000:]}")


def jcmd_dump(home, pid, path, label):
    done = subprocess.run([java_bin(home, "jcmd"), str(pid), "GC.heap_dump", str(path)],
                          capture_output=True, text=True, timeout=300)
    return check(done.returncode == 0 and path.exists(), f"{label}: jcmd GC.heap_dump: {done.stdout}{done.stderr}")


def same_counts(label, ours_path, dump, jdk_path):
    """Instance counts per class equal to the JDK's dump of the same quiescent heap: the program's
    classes exactly, and every class within 5 objects (each attach request allocates a few)."""
    ours = heap_model.read(ours_path, dump).histogram()
    theirs = heap_model.read(jdk_path, 0).histogram()
    check(len(ours) > 100 and len(theirs) > 100, f"{label}: both histograms read ({len(ours)}, {len(theirs)})")
    wrong = []
    for name in sorted(set(ours) | set(theirs)):
        a, b = ours.get(name, 0), theirs.get(name, 0)
        exact = name.startswith("HeapShapes")
        if (exact and a != b) or abs(a - b) > 5:
            wrong.append(f"{name}: {a} here, {b} in jcmd's dump")
    check(not wrong, f"{label} dump {dump}: {len(wrong)} classes with other counts than jcmd's:\n  " +
          "\n  ".join(wrong[:40]))
    print(f"{label} dump {dump}: {sum(ours.values())} objects, jcmd's {sum(theirs.values())}")


def side_files_used(label, jdk, stderr):
    """JDK 22+ writes the heap segments into a side file and copies it into the pipe: the agent reads
    the file instead and has the kernel copy what it leaves unchanged (nearly all of it) into the
    output. JDK 17 writes the pipe itself."""
    stats = [dict(re.findall(r"(\w+)=([\d.]+)", line)) for line in
             re.findall(r"fasthprof: heap dump stats: dumper=vm ([^\n]*)", stderr)]
    check(stats, f"{label}: the VM dump's stats line:\n{stderr}")
    first = stats[0]
    files, file_bytes, copied = (int(first.get(k, -1)) for k in ("side_files", "side_file_bytes", "kernel_copied"))
    if jdk == "jdk17":
        check(files == 0, f"{label}: no side file on JDK 17: {first}")
        return
    check(files >= 1 and copied >= 0.9 * file_bytes > 0,
          f"{label}: the side file read in place of the pipe, at least 90 % of it copied by the kernel: {first}\n{stderr}")
    print(f"{label}: {files} side file(s), {file_bytes} bytes, {copied} copied by the kernel")


def auto_run(jdk, home, gc):
    """auto: kill -QUIT and exit dumps by the JVM's dumper, counts equal to jcmd's."""
    label = f"{jdk} {gc} auto"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,verbose=y,dumper=vm"), "HeapShapes", [120],
                      [f"-XX:+Use{gc}GC"]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not ready(proc, folder, label):
            return
        jcmd_dump(home, proc.pid, folder / "jdk.hprof", label)
        check(quit_and_wait(proc, folder, 1), f"{label}: kill -QUIT gives a dump:\n{read_text(folder / 'stderr.txt')}")
        code = terminate(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        stderr = read_text(folder / "stderr.txt")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{stderr}")
        used = dumpers(folder)
        # VM death comes after HotSpot stopped its concurrent collector's threads, which JDK 25's
        # dumper with ZGC would wait for: the walk writes that dump, and says why.
        at_exit = "jvmti" if gc == "Z" and jdk != "jdk17" else "vm"
        check([who for _, who, _ in used] == ["vm", at_exit], f"{label}: kill -QUIT by the JVM's dumper, at exit by "
              f"{at_exit}: {used}\n{stderr}")
        check(at_exit == "vm" or "concurrent collector" in used[1][2], f"{label}: the walk at exit says why: {used}")
        side_files_used(label, jdk, stderr)
        check(len(DUMP_LINE.findall(stderr)) == 2, f"{label}: the dump line stays whole:\n{stderr}")
        # The user's kill -QUIT prints the JVM's thread dump; the agent's own requests add none.
        check(read_text(folder / "stdout.txt").count("Full thread dump") == 1, f"{label}: one thread dump on stdout")
        check(not leftovers(folder), f"{label}: no pipe, side file or trigger left: {leftovers(folder)}")
        readers_accept(label, dump, 2, shapes=(0,))
        same_counts(label, dump, 0, folder / "jdk.hprof")


def alternate_run(jdk, home, gc="G1"):
    """dumper=vm+jvmti: a VM dump, a walk, a VM dump in one file."""
    label = f"{jdk} {gc} dumper=vm+jvmti"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,verbose=y,dumper=vm+jvmti"),
                      "HeapShapes", [120], [f"-XX:+Use{gc}GC"]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not ready(proc, folder, label):
            return
        jcmd_dump(home, proc.pid, folder / "jdk.hprof", label)
        for n in (1, 2, 3):
            check(quit_and_wait(proc, folder, n), f"{label}: dump {n}:\n{read_text(folder / 'stderr.txt')}")
        proc.kill()
        proc.wait()
        used = [who for _, who, _ in dumpers(folder)]
        check(used == ["vm", "jvmti", "vm"], f"{label}: vm, jvmti, vm in turn: {used}")
        readers_accept(label, dump, 3, shapes=(0, 1, 2))
        same_counts(label, dump, 0, folder / "jdk.hprof")
        same_counts(label, dump, 2, folder / "jdk.hprof")


def many_classes_run(jdk, home):
    """20 000 classes, 6 VM dumps: the JDK's class serials pass 100 000 (each dump numbers every
    loaded class again); every dump still reads."""
    label = f"{jdk} many classes"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,verbose=y,dumper=vm"), "ManyClasses",
                      [20000, 300], ["-Xmx1g"]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not ready(proc, folder, label, 120):
            return
        for n in range(1, 7):
            check(quit_and_wait(proc, folder, n, 300), f"{label}: dump {n}:\n{read_text(folder / 'stderr.txt')}")
        check([who for _, who, _ in dumpers(folder)] == ["vm"] * 6, f"{label}: six VM dumps: {dumpers(folder)}")
        # The JDK's class serials keep counting across its dumps: a dump by jcmd now shows where
        # they are.
        if jcmd_dump(home, proc.pid, folder / "jdk.hprof", label):
            _, _, _, records = hprof_records.read(folder / "jdk.hprof")
            serials = hprof_records.load_classes(records)
            # JDK 17 keeps counting for the VM's life; JDK 25 numbers from 1 in every dump.
            if jdk == "jdk17":
                check(min(serials) > 100000, f"{label}: the JDK's class serials passed 100 000 "
                      f"({min(serials)}..{max(serials)} in jcmd's dump after ours)")
            else:
                print(f"{label}: the JDK's class serials restart in every dump ({min(serials)}..{max(serials)})")
        proc.kill()
        proc.wait()
        classes = [len(heap_model.read(dump, n).classes) for n in (0, 5)]
        check(all(c > 20000 for c in classes), f"{label}: every dump holds the 20 000 classes ({classes})")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 6" in output, f"{label}: hprof-verify --strict accepts six dumps:\n{output[-3000:]}")
        for n, (ok, output) in zip((0, 5), parser_check([("read", dump, 0), ("read", dump, 5)], xmx="2g")):
            check(ok, f"{label}: the OpenJDK parser reads dump {n}:\n{output[-3000:]}")
        [(ok, output)] = heap_check([("generic", dump, 5)])
        check(ok, f"{label}: VisualVM's library reads the last dump:\n{output[-3000:]}")


class Peer:
    """A loopback net= peer that stores everything it receives."""

    def __init__(self):
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        self.data = bytearray()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        connection, _ = self.server.accept()
        with connection:
            while True:
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                self.data += chunk


def net_run(jdk, home):
    label = f"{jdk} net="
    peer = Peer()
    with java_process(home, agentpath(f"heap=dump,format=b,net=127.0.0.1:{peer.port},verbose=y,dumper=vm"), "HeapShapes",
                      [120]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump:\n{read_text(folder / 'stderr.txt')}")
        terminate(proc)
        peer.thread.join(60)
        check([who for _, who, _ in dumpers(folder)] == ["vm", "vm"], f"{label}: VM dumps: {dumpers(folder)}")
        # JDK 17 writes the pipe inside its safepoint: the dump waits in a local side file, never on
        # the peer. JDK 22+ has written its own side file by the time it writes the pipe.
        side = [("side file" in why) for _, _, why in dumpers(folder)]
        check(side == [jdk == "jdk17"] * 2, f"{label}: a local side file on JDK 17 only: {dumpers(folder)}")
        check(not leftovers(folder), f"{label}: nothing left in the working folder: {leftovers(folder)}")
        received = folder / "received.hprof"
        received.write_bytes(peer.data)
        readers_accept(label, received, 2, shapes=(0,))


def disk_full_run(jdk, home):
    """A file size limit reached during a VM dump (HotSpot ignores SIGXFSZ: writes fail with EFBIG,
    the agent's and, on JDK 22+, the JVM's own side file's)."""
    label = f"{jdk} file size limit during a VM dump"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,verbose=y,dumper=vm"), "HeapShapes",
                      [120]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not ready(proc, folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a first dump")
        time.sleep(0.3)
        complete = dump.stat().st_size
        prlimit_fsize(proc.pid, complete + 200000)
        check(quit_and_wait(proc, folder, 2), f"{label}: the second dump ends:\n{read_text(folder / 'stderr.txt')}")
        time.sleep(0.3)
        stderr = read_text(folder / "stderr.txt")
        messages = [line for line in stderr.splitlines() if "File too large" in line or "left out" in line
                    or "cannot be used" in line]
        check(len(messages) == 1, f"{label}: one message: {messages}\n{stderr}")
        # Cut back to the end of the last complete report: the first dump, and the records streamed
        # between the reports (the JVM's Attach Listener thread, started by the first VM dump, gets
        # its THREAD START then), which the second report's start completed.
        cut = dump.stat().st_size
        check(complete <= cut < complete + 4096, f"{label}: the file is cut back to the complete dump "
              f"({cut} vs {complete})")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 1" in output, f"{label}: the cut file holds the first dump, complete:\n{output[-2000:]}")
        check(not leftovers(folder), f"{label}: no pipe or side file left: {leftovers(folder)}")
        check(proc.poll() is None, f"{label}: the JVM keeps running")
        prlimit_fsize(proc.pid, "unlimited")
        check(quit_and_wait(proc, folder, 3), f"{label}: the next dump works once there is room")
        time.sleep(0.3)
        proc.kill()
        proc.wait()
        readers_accept(label, dump, 2, shapes=(0, 1))


def no_attach_run(jdk, home):
    """-XX:+DisableAttachMechanism: the walk, said why; no signal, so no thread dump on stdout and
    exactly one report per request."""
    label = f"{jdk} -XX:+DisableAttachMechanism"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,verbose=y,dumper=vm"), "HeapShapes", [120],
                      ["-XX:+DisableAttachMechanism"]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        before = read_text(folder / "stdout.txt").count("Full thread dump")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        time.sleep(1)
        terminate(proc)
        stdout = read_text(folder / "stdout.txt")
        used = dumpers(folder)
        check(len(used) == 2 and all(who == "jvmti" and "DisableAttachMechanism" in why for _, who, why in used),
              f"{label}: the walk, saying why: {used}")
        # The user's own kill -QUIT prints one thread dump (the JVM does that); the agent adds none.
        check(stdout.count("Full thread dump") == before + 1, f"{label}: only the user's thread dump on stdout")
        check(dumps_done(folder) == 2, f"{label}: one report per request and one at exit")
        readers_accept(label, folder / "dump.hprof", 2, shapes=(0,))


def xrs_run(jdk, home):
    """-Xrs: the attach socket exists from the start (and SIGQUIT is the user's to end the JVM with):
    the exit dump is made by the JVM's dumper without any signal."""
    label = f"{jdk} -Xrs"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,verbose=y,dumper=vm"), "HeapShapes", [3],
                      ["-Xrs"]) as (proc, folder):
        code = proc.wait(timeout=120)
        check(code == 0, f"{label}: the program ends by itself (exit {code})")
        used = dumpers(folder)
        check([who for _, who, _ in used] == ["vm"] and "socket open" in used[0][2],
              f"{label}: the exit dump by the JVM's dumper through the open socket: {used}\n"
              f"{read_text(folder / 'stderr.txt')}")
        check("Full thread dump" not in read_text(folder / "stdout.txt"), f"{label}: no thread dump on stdout")
        # The program has ended by then (its holder threads too): a generic read.
        readers_accept(label, folder / "dump.hprof", 1)


def limit_modules_run(jdk, home):
    label = f"{jdk} --limit-modules java.base"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,verbose=y,dumper=vm"), "HeapShapes", [120],
                      ["--limit-modules", "java.base"]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        terminate(proc)
        check([who for _, who, _ in dumpers(folder)] == ["vm", "vm"], f"{label}: VM dumps: {dumpers(folder)}")
        readers_accept(label, folder / "dump.hprof", 2, shapes=(0,))


def each_jdk(run, *args):
    return lambda: [run(jdk, home, *args) for jdk, home in jdks()]


if __name__ == "__main__":
    run_cases("vm_dump", {
    "auto_g1": each_jdk(auto_run, "G1"),
    "auto_z": each_jdk(auto_run, "Z"),
    "alternate": each_jdk(alternate_run),
    "many_classes": each_jdk(many_classes_run),
    "net": each_jdk(net_run),
    "disk_full": each_jdk(disk_full_run),
    "no_attach": each_jdk(no_attach_run),
    "xrs": each_jdk(xrs_run),
    "limit_modules": each_jdk(limit_modules_run),
    })
