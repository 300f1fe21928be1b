"""Memory per ended thread: a program that starts threads all day must not grow the agent. Runs
ThreadTurnover (short-lived threads, each allocating once) with few and with many threads and
compares the agent's own count of bytes in use at exit (verbose=y prints it): what is kept per
ended thread shows up as growth with the count. The count covers the agent's tables (threads,
names, traces, per-thread allocation state); it does not move with the JVM's own memory or with
the machine's load, so the bound can be tight."""
import os
import re

from harness import agentpath, check, finish, jdks, run_java, verify_binary

FEW, MANY = 5000, 40000
# Bytes the agent may gain between the two runs: a table that grows once (a trace table or an
# arena chunk more) is not growth per thread; 35000 more ended threads keeping 4 bytes each is.
ALLOWED_GROWTH = 128 * 1024

MODES = (
    "heap=sites,cpu=samples",
    "heap=sites,cpu=samples,format=b",
    "heap=dump,format=b",
)

IN_USE = re.compile(r"fasthprof: memory: (\d+) bytes in use at exit, peak (\d+)")


def in_use_at_exit(home, label, options, threads):
    out = "out.hprof" if "format=b" in options else "out.txt"
    run = run_java(home, agentpath(f"{options},verbose=y,file={out}"), main="ThreadTurnover",
                   args=[str(threads)], jvm_args=["-Xmx64m"], timeout=300)
    found = IN_USE.search(run.stderr)
    if not check(run.code == 0 and f"ended {threads} threads" in run.stdout and found is not None,
                 f"{label} {options}: {threads} threads run to the end and the agent says its memory in use", run):
        return None
    if "format=b" in options:
        ok, output = verify_binary(os.path.join(run.folder, out))
        check(ok, f"{label} {options}: the output of {threads} threads verifies\n{output[-2000:]}")
    return int(found.group(1))


for label, home in jdks():
    for options in MODES:
        few = in_use_at_exit(home, label, options, FEW)
        many = in_use_at_exit(home, label, options, MANY)
        if few is None or many is None:
            continue
        growth = many - few
        print(f"{label} {options}: {few} bytes in use after {FEW} threads, {many} after {MANY} "
              f"({growth / (MANY - FEW):.1f} bytes per ended thread)", flush=True)
        check(growth < ALLOWED_GROWTH,
              f"{label} {options}: {MANY - FEW} more ended threads grew the agent by {growth} bytes "
              f"(allowed {ALLOWED_GROWTH})")

finish("thread_turnover")
