"""The `fasthprof` verbs on the hostile files of issue 32 (made by hostile_files.py, no JVM): each
verb finishes within a time limit and a memory bound, with exit 0 on a valid file and otherwise
exit 2 and one message. Cases:
  agent_recursion  the agent's own file (cpu=samples,depth=65535) of DeepRecursion's 60 000 frames,
               on each JDK: flame draws every frame
  deep_stacks  a 60 000-frame recursion and a 60 000-frame looping stack named by 1000 rows:
               flame (its page holds every frame), collapsed, pprof, summary, text
  class_chain  a 20 000-class chain of super classes (verify in bounded memory, text in bounded
               time; the super-class-first order of text's CLS lines), and a cyclic chain
  gzip_bomb    a 1 MiB gzip file that expands to 1 GiB: refused by every reading verb before the
               temporary file passes the limit; 64 MiB of rows naming one 2000-frame trace:
               summary, collapsed, flame and pprof in bounded memory; a gzip file inside a gzip file
  pprof_names  names in the JVM's modified UTF-8 (and a byte that is no UTF-8) become UTF-8 in the
               pprof profile, with no message (found by fuzz_verb_pprof)"""
import contextlib
import gzip
import os
import pathlib
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

import hostile_files
from harness import agentpath, check, cleanup, on_each_jdk, run_cases, run_java

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")
MIB = 1 << 20


class Run:
    def __init__(self, code, stdout, stderr, seconds, rss_mib):
        self.code, self.stdout, self.stderr, self.seconds, self.rss_mib = code, stdout, stderr, seconds, rss_mib

    def __str__(self):
        return f"exit {self.code}, {self.seconds:.1f} s, {self.rss_mib:.0f} MiB: {self.stderr[-300:]!r}"


def fasthprof(folder, *args, timeout=60, address_space=4096 * MIB, file_size=None):
    """Runs the command with its own address space and file size limits; its peak RSS from wait4."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    out, err = folder / "stdout.txt", folder / "stderr.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        start = time.monotonic()
        proc = subprocess.Popen([COMMAND, *map(str, args)], stdout=stdout, stderr=stderr, preexec_fn=limits)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(proc.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"),
               time.monotonic() - start, usage.ru_maxrss / 1024)


@contextlib.contextmanager
def hostile_folder():
    """A new folder for one case's files, removed when the case ends."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-hostile-"))
    try:
        yield folder
    finally:
        cleanup(folder)


def done(label, run, seconds, rss_mib):
    check(run.code == 0 and run.stderr == "", f"{label}: exit 0 and no message: {run}")
    check(run.seconds < seconds and run.rss_mib < rss_mib, f"{label}: within {seconds} s and {rss_mib} MiB: {run}")


def refused(label, run, expect, seconds=20):
    lines = run.stderr.splitlines()
    check(run.code == 2 and len(lines) == 1 and re.search(expect, lines[0]) is not None,
          f"{label}: exit 2 and one message matching {expect!r}: {run}")
    check(run.seconds < seconds, f"{label}: refused within {seconds} s: {run}")


def page_nodes(page):
    """The nodes of a flame page's flat list (the root's [name, value, parent], then one per frame)."""
    return len(re.findall(r'\],\["', page.split("const NODES = ", 1)[-1].split(";\n", 1)[0])) + 1


def agent_recursion(jdk, home):
    with hostile_folder() as folder:
        profile = folder / "deep.hprof"
        run = run_java(home, agentpath(f"cpu=samples,depth=65535,format=b,file={profile}"), main="DeepRecursion",
                       args=["60000", "1000"])
        if not check(run.code == 0, f"{jdk}: DeepRecursion", run):
            return
        run = fasthprof(folder, "flame", "-o", folder / "page.html", profile)
        done(f"{jdk}: flame of a 60 000-frame recursion", run, 20, 300)
        nodes = page_nodes((folder / "page.html").read_text()) if run.code == 0 else 0
        check(nodes > 60_000, f"{jdk}: the page holds every frame of the recursion: {nodes} nodes")


def case_deep_stacks():
    with hostile_folder() as folder:
        deep, looping = folder / "deep.hprof", folder / "loop.hprof"
        deep.write_bytes(hostile_files.deep_recursion(60_000))
        looping.write_bytes(hostile_files.looping_stack(60_000, rows=1000))
        for path, nodes in ((deep, 60_002), (looping, 60_002)):
            label = f"flame {path.name}"
            run = fasthprof(folder, "flame", "-o", folder / "page.html", path)
            done(label, run, 20, 300)
            page = (folder / "page.html").read_text() if run.code == 0 else ""
            # The root, the thread's root (flame roots each thread apart), then one node per frame:
            # 60 000 levels, none left out.
            drawn = page_nodes(page)
            check(drawn == nodes, f"{label}: the page holds {nodes} nodes, found {drawn}")
            for verb in (["collapsed"], ["summary"], ["text"], ["pprof", "-o", folder / "out.pb.gz"]):
                done(f"{verb[0]} {path.name}", fasthprof(folder, *verb, path), 20, 300)


def case_class_chain():
    with hostile_folder() as folder:
        chain = folder / "chain.hprof"
        chain.write_bytes(hostile_files.class_chain(20_000))
        run = fasthprof(folder, "verify", chain)
        # The file maps into memory, 11 MiB; a layout per class made it 250 MiB.
        done("verify chain", run, 20, 80)
        run = fasthprof(folder, "text", chain)
        done("text chain", run, 20, 200)
        classes = re.findall(r"^CLS \S+ \(name=Chain(\d+),", run.stdout, re.M)
        check(classes == [str(i) for i in range(1, 20_001)], f"text chain: CLS lines superclass first: {classes[:5]}")
        cyclic = folder / "cyclic.hprof"
        cyclic.write_bytes(hostile_files.class_chain(2000, cyclic=True))
        run = fasthprof(folder, "verify", cyclic)
        check(run.code == 1 and "its own super class" in run.stderr, f"verify cyclic chain: exit 1, a cycle: {run}")
        done("text cyclic chain", fasthprof(folder, "text", cyclic), 20, 200)
        # The object graph makes a class's field layout once, from its superclass's: one visit per
        # class of the chain, looping or not.
        for path in (chain, cyclic):
            done(f"dominators {path.name}", fasthprof(folder, "dominators", "--json", path), 20, 200)
            done(f"leaks {path.name}", fasthprof(folder, "leaks", "--json", path), 20, 200)


def case_gzip_bomb():
    with hostile_folder() as folder:
        bomb = folder / "bomb.hprof.gz"
        bomb.write_bytes(hostile_files.row_bomb(1 << 30))
        # The file size limit stands for the temporary folder's space: past it a write fails.
        for verb in (["verify"], ["summary"], ["dominators"], ["leaks"], ["report", "-o", folder / "report"], ["text"], ["collapsed"], ["diff", bomb], ["flame"],
                     ["pprof", "-o", folder / "out.pb.gz"]):
            run = fasthprof(folder, *verb, bomb, file_size=300 * MIB)
            refused(f"{verb[0]} 1 GiB bomb", run, r"expands past the limit of 268435456 bytes .* --max-expanded")
        run = fasthprof(folder, "summary", "--max-expanded", "100M", bomb, file_size=300 * MIB)
        refused("summary --max-expanded 100M", run, r"expands past the limit of 104857600 bytes \(as set\)")
        rows = folder / "rows.hprof.gz"
        rows.write_bytes(hostile_files.row_bomb(64 * MIB))
        # 8 million rows of 8 bytes: the model keeps them (64 MiB), summary a sorted copy.
        for verb in (["summary"], ["collapsed"], ["flame"], ["pprof", "-o", folder / "out.pb.gz"]):
            done(f"{verb[0]} 64 MiB of rows", fasthprof(folder, *verb, rows, file_size=300 * MIB), 30, 400)
        nested = folder / "nested.hprof.gz"
        nested.write_bytes(gzip.compress(rows.read_bytes(), 1))
        refused("summary of a gzip file in a gzip file", fasthprof(folder, "summary", nested), r"nested.hprof.gz: ")


def case_pprof_names():
    with hostile_folder() as folder:
        names = folder / "names.hprof"
        names.write_bytes(hostile_files.modified_utf8_names())
        run = fasthprof(folder, "pprof", "-o", folder / "names.pb.gz", names)
        if not check(run.code == 0 and run.stderr == "", f"pprof of modified UTF-8 names: exit 0, no message: {run}"):
            return
        profile = gzip.decompress((folder / "names.pb.gz").read_bytes())
        smile = "\U0001F600".encode()
        for name in (b"Smile" + smile + b".run\0" + smile, b"Bad\xef\xbf\xbd.main"):
            check(name in profile, f"pprof of modified UTF-8 names: {name!r} in the string table")


if not COMMAND:
    sys.exit("FASTHPROF_COMMAND is not set (meson test sets it)")
run_cases("fasthprof_hostile", {
    "agent_recursion": on_each_jdk(agent_recursion),
    "deep_stacks": case_deep_stacks,
    "class_chain": case_class_chain,
    "gzip_bomb": case_gzip_bomb,
    "pprof_names": case_pprof_names,
})
