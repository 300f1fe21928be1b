"""Memory per ended thread: a program that starts threads all day must not grow the agent. Runs
ThreadTurnover (short-lived threads, each allocating once) with few and with many threads and
compares the agent's own count of bytes in use at exit (verbose=y prints it): what is kept per
ended thread shows up as growth with the count. The count covers the agent's tables (threads,
names, traces), the allocation queue and the per-thread allocation state; it does not move with
the JVM's own memory. The per-thread state (a queue producer with its block index and block, the
frame buffer) is pooled: there are as many as the most threads that allocated at once, which
moves with the machine's load, so each state one run made more than the other is allowed for."""
import os
import re

from harness import agentpath, check, finish, jdks, run_java, verify_binary

FEW, MANY = 5000, 40000
# Bytes the agent may gain between the two runs: a table that grows once (a trace table or an
# arena chunk more) is not growth per thread; 35000 more ended threads keeping 4 bytes each is.
ALLOWED_GROWTH = 128 * 1024
# What one more pooled per-thread allocation state may hold: its queue producer with its block
# index and the blocks it keeps, its frame buffer (measured: 16-17 KiB per state).
PER_STATE = 20 * 1024

MODES = (
    "heap=sites,cpu=samples",
    "heap=sites,cpu=samples,format=b",
    "heap=dump,format=b",
)

IN_USE = re.compile(r"fasthprof: memory: (\d+) bytes in use at exit, peak (\d+)")
STATES = re.compile(r"fasthprof: allocation sites: .* (\d+) thread states")


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
    states = STATES.search(run.stderr)
    return int(found.group(1)), int(states.group(1)) if states else 0


for label, home in jdks():
    # The per-thread state is the agent's own: JDK 17 runs every mode, a later JDK (whose thread
    # events come from other code) the one that keeps the most per thread.
    for options in MODES if label == "jdk17" else MODES[1:2]:
        few = in_use_at_exit(home, label, options, FEW)
        many = in_use_at_exit(home, label, options, MANY)
        if few is None or many is None:
            continue
        (few_bytes, few_states), (many_bytes, many_states) = few, many
        growth = many_bytes - few_bytes
        allowed = ALLOWED_GROWTH + max(0, many_states - few_states) * PER_STATE
        print(f"{label} {options}: {few_bytes} bytes in use after {FEW} threads ({few_states} thread states), "
              f"{many_bytes} after {MANY} ({many_states}): {growth / (MANY - FEW):.1f} bytes per ended thread",
              flush=True)
        check(growth < allowed,
              f"{label} {options}: {MANY - FEW} more ended threads grew the agent by {growth} bytes "
              f"(allowed {allowed}: {ALLOWED_GROWTH} and {PER_STATE} per pooled thread state more)")

finish("thread_turnover")
