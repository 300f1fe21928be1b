"""dumper=fork (and auto, which picks it where its guards pass): heap dumps written by HotSpot's own
dumper in a child forked at the heap walk's safepoint, while the program runs on. On JDK 17 and 25:

- G1 and Parallel (and Serial with attach off): a dump on kill -QUIT and one at exit, both by fork, each read by hprof-verify
  --strict, VisualVM's heap library and the OpenJDK test-library parser, with per-class instance
  counts equal to `jcmd GC.heap_dump` of the same quiescent heap; the program held for little more
  than the fork (the stats line's pause); no child left behind;
- the same while threads allocate (the dump is the heap at the fork: it reads whole);
- ZGC: auto falls back to the JVM's dumper through attach and says why under verbose=y;
  dumper=fork says so without verbose=y;
- net= and gz=y: the dump by fork sent to a peer, and compressed;
- the child killed mid-dump: one message, the file reads (cut back to the last complete report),
  the next request works by fork, no process left;
- too little memory for the child's copies (a planted /proc, FASTHPROF_MEMORY_ROOT): auto uses the
  JVM's dumper and says why, dumper=fork says it cannot;
- a storm of ten kill -QUIT: ten dumps by fork, one after the other, all read;
- fork() failing (EAGAIN as at the process limit, ENOMEM): the JVM's dumper writes the dump, the
  reason said;
- jemalloc preloaded (its pthread_atfork handlers run at the fork): by fork all the same.

Each case is a Meson test of its own (`fork_dump.py <case>`, suite fork_dump).
"""
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time

from harness import (agentpath, check, jdks, read_text, run_cases, terminate, verify_binary, wait_for,
                     java_process)
from vm_dump import Peer, dumps_done, jcmd_dump, leftovers, quit_and_wait, readers_accept, ready, same_counts

FORK_LINE = re.compile(r"fasthprof: heap dump: (dumper=[a-z]+): by fork \(")
NOT_FORK = re.compile(r"fasthprof: heap dump: (dumper=[a-z]+): not by fork: ([^\n]*)")
STATS = re.compile(r"fasthprof: heap dump stats: dumper=(fork|vm) ([^\n]*)")


def stats(stderr):
    """[(dumper, {figure: value})] of every dump's stats line, in order."""
    return [(who, {k: float(v) for k, v in re.findall(r"(\w+)=([-\d.]+)", figures)})
            for who, figures in STATS.findall(stderr)]


def children(pid):
    """The live child processes of pid (the dump's child while it runs)."""
    found = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def by_fork_check(label, stderr, count):
    """count dumps, every one by fork, each pause short."""
    said = stats(stderr)
    check([who for who, _ in said] == ["fork"] * count, f"{label}: {count} dumps by fork: {said}\n{stderr[-3000:]}")
    for who, figures in said:
        # The pause is the heap walk's call around the fork; the fork of a small JVM takes a few ms.
        # On a loaded machine reaching the safepoint can take a second (1.18 s once, under a load of
        # 8, while the child wrote for 1.78 s): a pause well below the child's own time is still not
        # a program held for its dump, which would pause for all of it and more.
        pause = figures.get("pause_seconds", 9)
        check((pause < 1.0 or pause < 0.8 * figures.get("child_seconds", 0))
              and figures.get("fork_seconds", 9) <= pause,
              f"{label}: the program held for about the fork: {figures}")
        check(figures.get("child_extra_bytes", -1) >= 0, f"{label}: the child's extra memory said: {figures}")
    if said:
        print(f"{label}: pauses " + ", ".join(f"{f['pause_seconds'] * 1000:.1f} ms" for _, f in said) +
              f"; child's extra memory {said[0][1]['child_extra_bytes'] / 2**20:.1f} MB")


def one_dump(home, label, options, jvm_args=(), env=None):
    """HeapShapes with the agent's options, one kill -QUIT dump, an orderly end: (stderr, the dump's
    readers' verdicts checked). None when the program did not start."""
    with java_process(home, agentpath(options), "HeapShapes", [120], list(jvm_args), env_extra=env) as (proc, folder):
        if not ready(proc, folder, label):
            return None
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump:\n{read_text(folder / 'stderr.txt')}")
        terminate(proc)
        readers_accept(label, folder / "dump.hprof", dumps_done(folder), shapes=(0,))
        return read_text(folder / "stderr.txt")


def quiescent_run(jdk, home, gc):
    """auto on a quiescent heap: kill -QUIT and exit by fork, counts equal to jcmd's."""
    label = f"{jdk} {gc} auto by fork"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,verbose=y"), "HeapShapes", [120],
                      [f"-XX:+Use{gc}GC"]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not ready(proc, folder, label):
            return
        jcmd_dump(home, proc.pid, folder / "jdk.hprof", label)
        check(quit_and_wait(proc, folder, 1), f"{label}: kill -QUIT gives a dump:\n{read_text(folder / 'stderr.txt')}")
        check(not children(proc.pid), f"{label}: no child left after the dump: {children(proc.pid)}")
        code = terminate(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        stderr = read_text(folder / "stderr.txt")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{stderr}")
        check(len(FORK_LINE.findall(stderr)) == 2, f"{label}: verbose=y says both go by fork:\n{stderr}")
        by_fork_check(label, stderr, 2)
        check(len(re.findall(r"^Dumping Java heap \.\.\. done\.\n", stderr, re.M)) == 2,
              f"{label}: the dump line stays whole:\n{stderr}")
        check(not leftovers(folder), f"{label}: no pipe or side file left: {leftovers(folder)}")
        readers_accept(label, dump, 2, shapes=(0,))
        same_counts(label, dump, 0, folder / "jdk.hprof")


def serial_no_attach_run(jdk, home):
    """The Serial collector with attach off: by fork all the same (a fork dump needs no attach)."""
    label = f"{jdk} Serial, attach off, by fork"
    stderr = one_dump(home, label, "heap=dump,format=b,file=dump.hprof,verbose=y",
                      ["-XX:+UseSerialGC", "-XX:+DisableAttachMechanism"])
    if stderr is not None:
        by_fork_check(label, stderr, 2)


def busy_run(jdk, home):
    """Dumps by fork while two threads allocate: every dump reads whole."""
    label = f"{jdk} by fork while threads allocate"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,dumper=fork,verbose=y"), "HeapShapes",
                      [120, 2]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        for n in (1, 2, 3):
            check(quit_and_wait(proc, folder, n), f"{label}: dump {n}:\n{read_text(folder / 'stderr.txt')[-3000:]}")
        terminate(proc)
        stderr = read_text(folder / "stderr.txt")
        by_fork_check(label, stderr, 4)
        readers_accept(label, folder / "dump.hprof", 4, shapes=(0, 1, 2, 3))


def zgc_run(jdk, home):
    """ZGC: not by fork; auto says why (verbose=y) and the JVM's dumper writes the dump; dumper=fork
    says it cannot without being asked to be verbose."""
    label = f"{jdk} ZGC"
    stderr = one_dump(home, label, "heap=dump,format=b,file=dump.hprof,doe=n,verbose=y", ["-XX:+UseZGC"])
    if stderr is not None:
        refused = NOT_FORK.findall(stderr)
        check(refused and "ZGC" in refused[0][1], f"{label}: auto says why not by fork: {refused}\n{stderr}")
        check([who for who, _ in stats(stderr)] == ["vm"], f"{label}: the JVM's dumper wrote it: {stats(stderr)}")
    stderr = one_dump(home, label, "heap=dump,format=b,file=dump.hprof,doe=n,dumper=fork", ["-XX:+UseZGC"])
    if stderr is not None:
        check("fasthprof: dumper=fork: not by fork: ZGC" in stderr and "the JVM's dumper writes this dump instead"
              in stderr, f"{label}: dumper=fork says it cannot:\n{stderr}")


def net_run(jdk, home):
    label = f"{jdk} by fork to net="
    peer = Peer()
    with java_process(home, agentpath(f"heap=dump,format=b,net=127.0.0.1:{peer.port},verbose=y"), "HeapShapes",
                      [120]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump:\n{read_text(folder / 'stderr.txt')}")
        terminate(proc)
        peer.thread.join(60)
        by_fork_check(label, read_text(folder / "stderr.txt"), 2)
        check(not leftovers(folder), f"{label}: nothing left in the working folder: {leftovers(folder)}")
        received = folder / "received.hprof"
        received.write_bytes(peer.data)
        readers_accept(label, received, 2, shapes=(0,))


def gzip_run(jdk, home):
    label = f"{jdk} by fork with gz=y"
    with java_process(home, agentpath("heap=dump,format=b,gz=y,file=dump.hprof.gz,verbose=y"), "HeapShapes",
                      [120]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump:\n{read_text(folder / 'stderr.txt')}")
        terminate(proc)
        by_fork_check(label, read_text(folder / "stderr.txt"), 2)
        ok, output = verify_binary(folder / "dump.hprof.gz")
        check(ok and "heap dumps: 2" in output, f"{label}: hprof-verify --strict reads 2 compressed dumps:\n"
              f"{output[-3000:]}")
        plain = folder / "dump.hprof"
        with open(plain, "wb") as out:
            subprocess.run(["gzip", "-dc", str(folder / "dump.hprof.gz")], stdout=out, check=True)
        readers_accept(label, plain, 2, shapes=(0,))


def killed_child_run(jdk, home):
    """The child stopped as it starts, then killed: one message, the file reads, the next dump works."""
    label = f"{jdk} the dump's child killed"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,dumper=fork,verbose=y"),
                      "HeapShapes", [120]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        os.kill(proc.pid, signal.SIGQUIT)
        child = []
        wait_for(lambda: child.extend(children(proc.pid)) or child, 30, step=0.0005)
        if not check(child, f"{label}: a child appears:\n{read_text(folder / 'stderr.txt')}"):
            return
        os.kill(child[0], signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(child[0], signal.SIGKILL)
        check(wait_for(lambda: " done.\n" in read_text(folder / "stderr.txt"), 60), f"{label}: the report ends")
        stderr = read_text(folder / "stderr.txt")
        said = re.findall(r"fasthprof: [^\n]*killed by signal 9[^\n]*", stderr)
        check(len(said) == 1, f"{label}: one message names the kill:\n{stderr}")
        check(wait_for(lambda: not children(proc.pid), 10), f"{label}: no child left: {children(proc.pid)}")
        check(quit_and_wait(proc, folder, 2), f"{label}: the next request gives a dump:\n{stderr}")
        terminate(proc)
        stderr = read_text(folder / "stderr.txt")
        check(stats(stderr)[-1][0] == "fork", f"{label}: the next dump by fork: {stats(stderr)}")
        ok, output = verify_binary(folder / "dump.hprof")
        dumps = int(re.search(r"heap dumps: (\d+)", output).group(1)) if "heap dumps:" in output else -1
        check(ok and dumps in (1, 2), f"{label}: the file reads, the cut dump left out or written whole by the "
              f"fallback:\n{output[-2000:]}")


def planted_proc(root, available_kb):
    """A /proc of a machine with available_kb of memory left (read_memory_headroom's files)."""
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/meminfo").write_text(f"MemTotal: 1000000 kB\nMemAvailable: {available_kb} kB\n")
    (root / "proc/self/statm").write_text("200000 50000 1000 10 0 60000 0\n")
    (root / "proc/sys/vm/overcommit_memory").write_text("0\n")


def headroom_run(jdk, home):
    """Too little memory for the child's copies: not by fork, said."""
    label = f"{jdk} too little memory for a fork"
    with tempfile.TemporaryDirectory(prefix="fasthprof-proc-") as planted:
        planted_proc(pathlib.Path(planted), 100 * 1024)
        for option, verbose in (("dumper=auto,verbose=y", True), ("dumper=fork", False)):
            stderr = one_dump(home, f"{label} ({option})", f"heap=dump,format=b,file=dump.hprof,doe=n,{option}",
                              env={"FASTHPROF_MEMORY_ROOT": planted})
            if stderr is None:
                return
            line = "fasthprof: heap dump: dumper=auto: not by fork: too little memory" if verbose else \
                "fasthprof: dumper=fork: not by fork: too little memory"
            check(line in stderr and "MemAvailable" in stderr, f"{label} ({option}): says why:\n{stderr}")
            if verbose:
                check([who for who, _ in stats(stderr)] == ["vm"], f"{label}: the JVM's dumper wrote it")


def fork_fails_run(jdk, home):
    """fork() failing (tests/fault/fork_fails.cpp, preloaded): the JVM's dumper writes the dump, and
    the reason is said: under verbose=y for auto, always for dumper=fork."""
    label = f"{jdk} fork() fails"
    for option, errno_name, text in (("dumper=auto,verbose=y", "EAGAIN", "Resource temporarily unavailable"),
                                     ("dumper=fork", "ENOMEM", "Cannot allocate memory")):
        env = {"LD_PRELOAD": os.environ["FASTHPROF_FORK_FAILS"], "FASTHPROF_TEST_FORK_ERRNO": errno_name}
        stderr = one_dump(home, f"{label} ({option}, {errno_name})",
                          f"heap=dump,format=b,file=dump.hprof,doe=n,{option}", env=env)
        if stderr is None:
            return
        line = f"fasthprof: the heap dump by fork failed (fork() failed: {text}); the JVM's dumper writes this dump"
        check(line in stderr, f"{label} ({option}): says why:\n{stderr}")
        check(stderr.count("Dumping Java heap ... done.") == 1, f"{label} ({option}): one dump done:\n{stderr}")
        if "verbose=y" in option:
            check([who for who, _ in stats(stderr)] == ["vm"], f"{label}: the JVM's dumper wrote it: {stats(stderr)}")


def jemalloc_run(jdk, home):
    """jemalloc preloaded into the program: its fork handlers (pthread_atfork: every arena locked
    around the fork) run on the VM thread at the safepoint; the dump is by fork all the same."""
    label = f"{jdk} jemalloc preloaded"
    stderr = one_dump(home, label, "heap=dump,format=b,file=dump.hprof,doe=n,dumper=fork,verbose=y",
                      env={"LD_PRELOAD": "libjemalloc.so.2"})
    if stderr is None:
        return
    check("fasthprof: memory: jemalloc" in stderr and "(already in the process)" in stderr,
          f"{label}: the agent shares the preloaded jemalloc:\n{stderr[-2000:]}")
    by_fork_check(label, stderr, 1)


def storm_run(jdk, home):
    """Ten kill -QUIT in a row: ten dumps by fork, one child at a time."""
    label = f"{jdk} QUIT storm by fork"
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,dumper=fork,verbose=y"),
                      "HeapShapes", [300, 1]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        most = 0
        stdout = folder / "stdout.txt"
        for sent in range(1, 11):
            os.kill(proc.pid, signal.SIGQUIT)
            # Two SIGQUITs pending at once are one to the JVM (seen on a loaded machine: eight dumps
            # of ten sent 50 ms apart): the next goes once the JVM took this one, which it shows by
            # its thread dump at once; the dumps themselves queue behind each other.
            check(wait_for(lambda: stdout.read_text().count("Full thread dump") >= sent, 30, step=0.01),
                  f"{label}: the JVM took request {sent}")
            most = max(most, len(children(proc.pid)))
        seen = [most]

        def done():
            seen.append(len(children(proc.pid)))
            return dumps_done(folder) >= 10
        check(wait_for(done, 300, step=0.01), f"{label}: ten dumps:\n{read_text(folder / 'stderr.txt')[-3000:]}")
        check(max(seen) <= 1, f"{label}: one child at a time ({max(seen)} seen)")
        check(wait_for(lambda: not children(proc.pid), 10), f"{label}: no child left")
        terminate(proc)
        stderr = read_text(folder / "stderr.txt")
        by_fork_check(label, stderr, dumps_done(folder))
        # hprof-verify --strict reads all ten; the two readers the first and the last (each dump is
        # the same kind of dump, and ten of each took minutes of a loaded CI machine).
        readers_accept(label, folder / "dump.hprof", dumps_done(folder), shapes=(0, 9), read=(0, 9))


def each_jdk(run, *args):
    return lambda: [run(jdk, home, *args) for jdk, home in jdks()]


if __name__ == "__main__":
    run_cases("fork_dump", {
        "g1": each_jdk(quiescent_run, "G1"),
        "parallel": each_jdk(quiescent_run, "Parallel"),
        "serial_no_attach": each_jdk(serial_no_attach_run),
        "busy": each_jdk(busy_run),
        "zgc": each_jdk(zgc_run),
        "net": each_jdk(net_run),
        "gzip": each_jdk(gzip_run),
        "killed_child": each_jdk(killed_child_run),
        "headroom": each_jdk(headroom_run),
        "storm": each_jdk(storm_run),
        "fork_fails": each_jdk(fork_fails_run),
        "jemalloc": each_jdk(jemalloc_run),
    })
