"""cpu=samples: the hot method ranks first with its share, the warm one appears, threads that sleep,
wait, park or block on a monitor are never counted, the total matches run time / interval x busy
threads, counts restart after each kill -QUIT report, the binary output verifies, the sampler works
under attach with thread CPU times, depth=0 records nothing, javac's own methods top a compile, and
cpu=samples with heap=dump (a heap dump while the sampler runs) stays consistent, and with more
busy threads than cores the total still keeps to run time / interval x busy threads. Each case is
a Meson test (`cpu_samples.py <case>`)."""
import os
import re
import signal
import subprocess
import tempfile

import hprof_records
from harness import (AGENT, agentpath, check, check_no_warnings, cleanup, java_bin, java_command, java_process,
                     javac_sources, on_each_jdk, run_cases, run_java, verify_binary, wait_for)

INTERVAL_MS = 10
# Methods of threads that never run: none of their frames may be counted.
NEVER_COUNTED = ("sleeperMethod", "waiterMethod", "parkerMethod", "blockedMethod", "holderMethod")
# The warm thread calls Thread.sleep after each burst. On its way in it runs Java code (on JDK 21+
# Thread.sleep is Java down to sleepNanos0), which is CPU use; once asleep it must not be counted, so
# sleep frames may take only a sliver of the samples.
BLOCKING = ("java.lang.Thread.sleep", "java.lang.Thread.beforeSleep", "java.lang.Object.wait", ".park")


def text_traces(text):
    """{serial: (offset, [frame 'class.method', ...])} from the TRACE records of a text file."""
    return {serial: (offset, [f for f in (line.strip().split("(")[0] for line in frames) if f != "<empty>"])
            for serial, (offset, frames) in hprof_records.text_traces(text).items()}


def text_sections(text):
    """[(offset, total, [(rank, self%, accum%, count, trace, method)])] for each CPU SAMPLES section."""
    return hprof_records.text_cpu_samples(text)


def binary_profile(path):
    """({trace serial: [frame 'class.method']}, [(total, [(count, trace)])], record order ok)."""
    _, id_size, _, records = hprof_records.read(path)
    classes = hprof_records.load_classes(records, id_size)
    frames = hprof_records.stack_frames(records, id_size)
    found = hprof_records.stack_traces(records, id_size)
    traces = {serial: [f"{classes.get(frames[i][1]) or '?'}.{frames[i][0] or '?'}" for i in ids]
              for serial, (_, ids) in found.items()}
    sections, order_ok = [], True
    for offset, total, rows in hprof_records.cpu_samples(records):
        order_ok &= all(trace in found and found[trace][0] < offset for _, trace in rows)
        sections.append((total, rows))
    return traces, sections, order_ok


def program_figures(stdout):
    match = re.search(r"CpuMix run_ms=(\d+) hot_cpu_ms=(\d+) warm_cpu_ms=(\d+)", stdout)
    return tuple(int(g) for g in match.groups()) if match else None


def check_mix(label, rows, traces, total, figures, run):
    """rows: [(count, trace serial)]; traces: {serial: [frames]}."""
    if not check(rows, f"{label}: CPU SAMPLES has rows", run):
        return
    by_trace = {}
    for count, serial in rows:
        by_trace[serial] = by_trace.get(serial, 0) + count
    ranked = sorted(by_trace.items(), key=lambda item: -item[1])
    top = traces.get(ranked[0][0], [])
    check(top[:1] == ["CpuMix.hotMethod"], f"{label}: the hot method ranks first (top trace {top})", run)
    check(ranked[0][1] / total > 0.5, f"{label}: the hot method has most samples: {ranked[0][1]} of {total}", run)
    check(any(traces.get(t, [])[:1] == ["CpuMix.warmMethod"] for t, _ in ranked),
          f"{label}: the warm method appears", run)
    in_blocking = 0
    # The blocking threads run for real only while they start and enter their wait (on JDK 21+
    # Thread.sleep runs Java code first): a round may catch that once or twice, never more.
    counted_blocking = []
    for serial, count in ranked:
        frames = traces.get(serial, [])
        if any(any(word in f for word in NEVER_COUNTED) for f in frames):
            counted_blocking.append((frames, count))
        if frames and any(word in frames[0] for word in BLOCKING):
            in_blocking += count
    blocked_total = sum(count for _, count in counted_blocking)
    check(blocked_total <= max(2, 0.01 * total),
          f"{label}: sleeping, waiting, parked or blocked threads were counted beyond their start: "
          f"{counted_blocking}", run)
    check(in_blocking <= 0.02 * total,
          f"{label}: samples in sleep/wait/park frames are a sliver: {in_blocking} of {total}", run)
    # Busy threads: hot all the time, warm for the share of the run its CPU time says. On a shared
    # machine the hot thread gets less than a core: a round counts it when it ran at all since the
    # previous one, so the total then lies between the CPU-time figure and the run-time figure.
    run_ms, hot_cpu, warm_cpu = figures
    busy = 1 + warm_cpu / max(1, run_ms)
    expected = run_ms / INTERVAL_MS * busy
    by_cpu = (hot_cpu + warm_cpu) / INTERVAL_MS
    print(f"{label}: total {total}, expected {expected:.0f} by run time, {by_cpu:.0f} by CPU time")
    check(0.7 * min(expected, by_cpu) <= total <= 1.3 * expected,
          f"{label}: total {total} within 30 % of {expected:.0f} (run {run_ms} ms, {busy:.2f} busy threads; "
          f"{by_cpu:.0f} by CPU time)", run)


def many_busy_threads(label, home, threads=8):
    """More busy threads than cores (this machine has 2): every busy thread is due a sample per
    interval, whether it ran in that interval or waited for a core, so the total keeps to run time /
    interval x threads."""
    run = run_java(home, agentpath(f"cpu=samples,depth=4,interval={INTERVAL_MS},file=busy.txt"), "CpuBusy",
                   [str(threads), "2000"])
    match = re.search(r"CpuBusy threads=\d+ run_ms=([\d.]+)", run.stdout)
    if not check(run.code == 0 and match, f"{label} {threads} busy: CpuBusy runs with cpu=samples", run):
        return
    sections = text_sections(run.text("busy.txt"))
    total = sections[0][1] if sections else 0
    expected = float(match.group(1)) / INTERVAL_MS * threads
    print(f"{label} {threads} busy threads on {os.cpu_count()} CPUs: total {total}, expected {expected:.0f}")
    check(0.7 * expected <= total <= 1.3 * expected,
          f"{label} {threads} busy: total {total} within 30 % of {expected:.0f} (threads waiting for a core count)", run)


def text_mechanisms(label, home):
    # Text: one section at exit, its TRACEs before it. Both stack mechanisms: the signal one (the
    # default: AsyncGetCallTrace in a SIGPROF handler) and the deferred per-thread requests (its
    # fallback, chosen by the cpustacks= option), each confirmed by the sampler's own figures line,
    # which verbose=y prints at exit.
    for mode in ("signal", "deferred"):
        run = run_java(home, agentpath(f"cpu=samples,depth=6,interval={INTERVAL_MS},file=out.txt,verbose=y,"
                                       f"cpustacks={mode}"), "CpuMix", ["3000"])
        figures = program_figures(run.stdout)
        if check(run.code == 0 and figures, f"{label} {mode}: CpuMix runs with cpu=samples", run):
            check(f"fasthprof cpu sampler: mode={mode} " in run.stderr, f"{label} {mode}: the {mode} mechanism ran", run)
            text = run.text("out.txt")
            check("HPROF ERROR" not in run.stderr and "not implemented" not in run.stderr,
                  f"{label} {mode}: no error or pending-feature line", run)
            check("Dumping CPU usage by sampling running threads ... done." in run.stderr,
                  f"{label} {mode}: the original's verbose line", run)
            sections = text_sections(text)
            traces = text_traces(text)
            if check(len(sections) == 1, f"{label} {mode}: one CPU SAMPLES section", run):
                offset, total, rows = sections[0]
                check(all(r[0] != "bad" for r in rows), f"{label} {mode}: every row has the §2.10 layout: {rows}", run)
                good = [r for r in rows if r[0] != "bad"]
                check([r[0] for r in good] == list(range(1, len(good) + 1)), f"{label} {mode}: ranks run 1..n", run)
                check(all(traces.get(r[4], (offset + 1,))[0] < offset for r in good),
                      f"{label} {mode}: every printed row's TRACE precedes the section", run)
                check(good and abs(good[-1][2] - 100.0 * sum(r[3] for r in good) / total) < 0.02,
                      f"{label} {mode}: accum is the running share of the total", run)
                if good:
                    check(good[0][5] == "CpuMix.hotMethod", f"{label} {mode}: the row names the top frame's method", run)
                check_mix(f"{label} {mode} text", [(r[3], r[4]) for r in good], {k: v[1] for k, v in traces.items()},
                          total, figures, run)
        cleanup(run.folder)


def binary_quit(label, home):
    # Binary, with heap=sites, and a kill -QUIT report in the middle: counts restart after it.
    with java_process(home, agentpath(f"cpu=samples,heap=sites,format=b,depth=6,file=out.hprof"),
                      "CpuMix", ["3000"]) as (proc, folder):
        stdout = folder / "stdout.txt"
        check(wait_for(lambda: "CpuMix running" in stdout.read_text(), 30), f"{label}: binary run started")
        wait_for(lambda: False, 1.5)
        os.kill(proc.pid, signal.SIGQUIT)
        code = proc.wait(timeout=60)
        out = stdout.read_text()
        figures = program_figures(out)
        check(code == 0 and figures, f"{label}: binary run exits normally ({code})\n{out}")
        ok, verified = verify_binary(folder / "out.hprof")
        check(ok, f"{label}: binary output passes the verifier\n{verified}")
        traces, sections, order_ok = binary_profile(folder / "out.hprof")
        check(order_ok, f"{label}: every CPU SAMPLES row names a TRACE written before it")
        if check(len(sections) == 2 and figures, f"{label}: two CPU SAMPLES records (kill -QUIT, exit): {len(sections)}"):
            first, last = sections
            check(first[0] >= 50 and last[0] >= 50 and all(t >= sum(c for c, _ in rows) for t, rows in sections),
                  f"{label}: both reports have samples, each total covers its rows: {first[0]}, {last[0]}")
            # Counts restart: the two totals together cover the run once.
            check_mix(f"{label} binary (both reports)", list(first[1]) + list(last[1]),
                      traces, first[0] + last[0], figures, None)
            check(max(first[0], last[0]) < 0.85 * (first[0] + last[0]),
                  f"{label}: the second report counts only what came after the first: {first[0]}, {last[0]}")


def with_heap_dump(label, home):
    # heap=dump with cpu=samples: two heap dumps (kill -QUIT) while the sampler signals busy threads.
    # The sampler holds still during each heap walk (no signal, no walk, no stack request), and
    # every report has its CPU SAMPLES.
    with java_process(home, agentpath("heap=dump,cpu=samples,format=b,depth=4,file=out.hprof"),
                      "CpuMix", ["3000"]) as (proc, folder):
        stdout = folder / "stdout.txt"
        check(wait_for(lambda: "CpuMix running" in stdout.read_text(), 30), f"{label}: heap dump run started")
        for _ in range(2):
            wait_for(lambda: False, 0.8)
            os.kill(proc.pid, signal.SIGQUIT)
        code = proc.wait(timeout=120)
        out = stdout.read_text()
        check(code == 0 and program_figures(out), f"{label}: heap=dump,cpu=samples run exits normally ({code})\n{out}"
              f"{(folder / 'stderr.txt').read_text()[-2000:]}")
        ok, verified = verify_binary(folder / "out.hprof")
        check(ok, f"{label}: heap=dump,cpu=samples output passes the verifier\n{verified[-2000:]}")
        traces, sections, order_ok = binary_profile(folder / "out.hprof")
        check(order_ok and len(sections) == 3 and all(total >= 10 for total, _ in sections),
              f"{label}: three reports with heap dumps, each with CPU SAMPLES: {[t for t, _ in sections]}")
        if sections:
            check_mix(f"{label} heap=dump (all reports)", [row for _, rows in sections for row in rows], traces,
                      sum(t for t, _ in sections), program_figures(out), None)


def depth_zero(label, home):
    # depth=0: the section is there and empty, as the original.
    run = run_java(home, agentpath("cpu=samples,depth=0,file=out.txt"), "CpuMix", ["500"])
    sections = text_sections(run.text("out.txt")) if run.code == 0 else []
    check(len(sections) == 1 and sections[0][1] == 0 and not sections[0][2],
          f"{label}: depth=0 records no samples: {sections}", run)
    cleanup(run.folder)


def attach_late(label, home):
    # Attach: thread CPU times are granted to a late agent too, and the sampler starts at once.
    with java_process(home, None, "CpuMix", ["4000"]) as (proc, folder):
        check(wait_for(lambda: "CpuMix running" in (folder / "stdout.txt").read_text(), 30),
              f"{label}: attach target started")
        attach = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "JVMTI.agent_load", AGENT,
                                 f'"cpu=samples,depth=4,file={folder}/attached.txt"'],
                                capture_output=True, text=True, timeout=60)
        code = proc.wait(timeout=60)
        stderr_text = (folder / "stderr.txt").read_text()
        check(code == 0 and "gives no thread CPU times" not in stderr_text,
              f"{label}: attached sampler has thread CPU times\n{attach.stdout}{stderr_text}")
        text = (folder / "attached.txt").read_text() if (folder / "attached.txt").exists() else ""
        sections = text_sections(text)
        check(len(sections) == 1 and sections[0][2] and sections[0][2][0][5] == "CpuMix.hotMethod",
              f"{label}: attached sampler ranks the hot method first\n{text[-1500:]}")


def javac_run(label, home):
    # javac on a few hundred generated files: its own methods are where the CPU goes.
    folder = tempfile.mkdtemp(prefix="fasthprof-it-")
    sources = javac_sources(folder, 200, 10)
    javac = subprocess.run(java_command(home, f"-J{agentpath('cpu=samples,depth=1,file=javac.txt')}",
                                        "-d", os.path.join(folder, "classes"), *sources, tool="javac"),
                           cwd=folder, capture_output=True, text=True, timeout=300)
    check_no_warnings(f"{label}: javac with cpu=samples", javac.stdout, javac.stderr)
    check(javac.returncode == 0, f"{label}: javac compiles with the agent\n{javac.stderr[-2000:]}")
    text = open(os.path.join(folder, "javac.txt")).read() if os.path.exists(os.path.join(folder, "javac.txt")) else ""
    sections = text_sections(text)
    traces = {k: v[1] for k, v in text_traces(text).items()}
    if check(len(sections) == 1 and sections[0][2], f"{label}: javac run has CPU SAMPLES"):
        rows = [r for r in sections[0][2] if r[0] != "bad"]
        # depth=1: one row per method. The profile of a compile is flat: class loading, allocation
        # and the leaf library methods javac calls take single rows of a few % each, and a sampler
        # that reads stacks where the thread stands (not at its next safepoint poll) puts no single
        # javac method first. So "at the top" is by package: javac's methods hold most samples
        # together, more than any other package's.
        total = sections[0][1]
        by_package = {}
        for r in rows:
            name = r[5]
            package = "com.sun.tools.javac" if name.startswith("com.sun.tools.javac.") else ".".join(name.split(".")[:2])
            by_package[package] = by_package.get(package, 0) + r[3]
        ranked = sorted(by_package.items(), key=lambda item: -item[1])
        in_javac = by_package.get("com.sun.tools.javac", 0)
        check(in_javac >= 0.5 * total and ranked[0][0] == "com.sun.tools.javac",
              f"{label}: javac's methods top the profile ({in_javac} of {total} samples; by package "
              f"{ranked[:4]}):\n" + "\n".join(str(r) for r in rows[:10]))
    cleanup(folder)


run_cases("cpu_samples", {
    "many_busy_threads": on_each_jdk(many_busy_threads),
    "text": on_each_jdk(text_mechanisms),
    "binary_quit": on_each_jdk(binary_quit),
    "heap_dump": on_each_jdk(with_heap_dump),
    "depth_zero": on_each_jdk(depth_zero),
    "attach": on_each_jdk(attach_late),
    "javac": on_each_jdk(javac_run),
})
