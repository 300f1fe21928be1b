"""kill -QUIT in quick succession with heap=dump,cpu=samples on a busy program: the requests queue
up and the reports run back to back. Each report's CPU SAMPLES cover the time since the previous
report's, less the time its heap dump kept the program's threads suspended, so every report after
the first has samples in proportion to the time the program ran in between, once that is ten
sampling intervals or more (the program runs between the heap walks: while a report writes its
sections and clears the dump's tags)."""
import os
import re
import signal
import time

import hprof_records
from harness import agentpath, check, finish, java_process, jdks, wait_for

BUSY_THREADS = 4
INTERVAL_MS = 10
REQUESTS = 6
DUMP_STATS = re.compile(r"heap dump stats: seconds=([\d.]+) .*clear_seconds=([\d.]+)")


def storm(label, home):
    with java_process(home, agentpath(f"heap=dump,cpu=samples,interval={INTERVAL_MS},file=out.txt,verbose=y"),
                      "CpuBusy", [str(BUSY_THREADS), "15000"]) as (proc, folder):
        stderr = folder / "stderr.txt"
        wait_for(lambda: False, 2.0)
        check(proc.poll() is None, f"{label}: CpuBusy runs")
        stdout = folder / "stdout.txt"
        # When each report ends ("... done."), seen by polling: the interval a report's samples cover.
        ends = []

        def note_ends():
            done = stderr.read_text().count(" done.")
            while len(ends) < min(done, REQUESTS):
                ends.append(time.monotonic())
            return len(ends)

        for sent in range(1, REQUESTS + 1):
            os.kill(proc.pid, signal.SIGQUIT)
            # Two signals pending at once are one to the JVM: wait until it took this one (it
            # prints its thread dump at once; the report itself queues behind the others).
            check(wait_for(lambda: note_ends() >= 0 and stdout.read_text().count("Full thread dump") >= sent, 30,
                           step=0.01),
                  f"{label}: the JVM took request {sent}")
            wait_for(lambda: note_ends() < 0, 0.1, step=0.01)  # 0.1 s apart, still watching
        deadline = time.time() + 120
        while note_ends() < REQUESTS and time.time() < deadline and proc.poll() is None:
            time.sleep(0.01)
        check(len(ends) == REQUESTS, f"{label}: every request gets its report ({len(ends)} of {REQUESTS})")
        code = proc.wait(timeout=120)
        check(code == 0, f"{label}: the program exits normally ({code})")
        totals = hprof_records.text_cpu_totals((folder / "out.txt").read_text())
        stats = [(float(s), float(c)) for s, c in DUMP_STATS.findall(stderr.read_text())]
        print(f"{label}: CPU SAMPLES totals {totals}; report ends "
              f"{[round(b - a, 3) for a, b in zip(ends, ends[1:])]} s apart; dumps {stats}")
        if not check(len(totals) == REQUESTS + 1 and len(stats) == REQUESTS + 1,
                     f"{label}: one CPU SAMPLES section and one heap dump per report and at exit"):
            return
        # A sampler that stayed still after a walk would leave the reports after it empty, the one at
        # exit too; a report queued right behind another may cover no round at all (seen: two of
        # five, with another JVM test on the second core).
        check(totals[0] > 0 and totals[-1] > 0 and sum(totals[1:-1]) > 0,
              f"{label}: the reports have CPU samples (the queued ones together): {totals}")
        # The program ran between two report ends except during the dump (its walk, its tag
        # clearing): a lower bound on the rounds a report covers, in which both busy threads count
        # (running or waiting for a core). A tenth of it allows for a machine the sampler shares.
        # Reports that queued right behind the previous one cover only a few rounds (the program
        # ran 10-30 ms between them): a round or two lost to the sampler's own restart after a
        # walk is then the whole window, so only windows of ten rounds or more are held to it.
        for i in range(1, REQUESTS):
            ran = (ends[i] - ends[i - 1]) - stats[i][0] - stats[i][1]
            if ran < 10 * INTERVAL_MS / 1000:
                print(f"{label}: report {i + 1}: {totals[i]} samples for the {ran:.3f} s the program ran (not held)")
                continue
            floor = 0.1 * BUSY_THREADS * ran * 1000 / INTERVAL_MS
            check(totals[i] >= floor, f"{label}: report {i + 1} has samples for the {ran:.2f} s the program "
                                      f"ran since the previous one: {totals[i]} < {floor:.0f}")


for jdk_label, jdk_home in jdks():
    storm(jdk_label, jdk_home)

finish("report_storm")
