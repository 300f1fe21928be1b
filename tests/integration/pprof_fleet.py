"""`fasthprof pprof` as fleet tools read profiles, checked with `go tool pprof` (Debian's
golang-go; skipped without it or without the pprof verb), on real runs of JDK 17 and 25:

  heap     heap=sites,thread=y: the four sample types of Go's heap profiles (alloc_objects,
           alloc_space, inuse_objects, inuse_space, the default) with the period type
           space/bytes, and each sample's thread as the label "thread": -tagfocus=thread=main
           gives AllocSites$Item the objects main's sites allocated, as the records say
  cpu      cpu=samples,thread=y: -tagfocus=thread=busy-0 gives CpuBusy.spin busy-0's samples"""
import os
import pathlib
import re
import shutil
import struct
import subprocess
import tempfile

import hprof_records
from harness import agentpath, check, cleanup, on_each_jdk, run_cases, run_java, skip

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")


def needs_go():
    if not re.search(r"^  pprof ", subprocess.run([COMMAND, "help"], capture_output=True, text=True).stdout, re.M):
        skip("the pprof verb is not built (protobuf-compiler, libprotobuf-dev, golang-github-google-pprof-dev)")
    if shutil.which("go") is None:
        skip("go is not installed (golang-go, tools/install-deps.sh --tests)")


def go_pprof(path, *args):
    env = dict(os.environ, HOME=str(pathlib.Path(path).parent))  # go keeps a cache under $HOME
    done = subprocess.run(["go", "tool", "pprof", *args, str(path)], capture_output=True, text=True, timeout=300,
                          env=env)
    return done.stdout + done.stderr


def flat(output, name):
    """The flat column of a function in `go tool pprof -top` output, or None."""
    for line in output.splitlines():
        found = re.match(r"\s*([\d.]+\w*)\s+[\d.]+%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+)$", line)
        if found and found.group(2) == name:
            return found.group(1)
    return None


def records_of(path):
    """(class names by serial, {trace serial: (thread name, top frame name)}, records) of a binary file."""
    _, id_size, _, records = hprof_records.read(path)
    classes = {serial: names_java(name) for serial, name in hprof_records.load_classes(records, id_size).items()}
    threads = {serial: name for serial, _, _, name, _, _ in hprof_records.start_threads(records, id_size)}
    frames = hprof_records.stack_frames(records, id_size)
    traces = {}
    for r in records:
        if r.tag == 0x05:
            serial, thread, count = struct.unpack(">III", r.body[:12])
            top = struct.unpack(">Q", r.body[12:20])[0] if count else None
            method, class_serial = (frames[top][0], frames[top][1]) if top is not None else (None, None)
            traces[serial] = (threads.get(thread), f"{classes.get(class_serial)}.{method}" if top is not None else None)
    return classes, traces, records


def names_java(name):
    return name.replace("/", ".")


def heap(jdk, home):
    label = f"{jdk} pprof heap"
    needs_go()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-pprof-"))
    try:
        sites = folder / "sites.hprof"
        run = run_java(home, agentpath(f"heap=sites,thread=y,format=b,file={sites}"), main="AllocSites")
        if not check(run.code == 0, f"{label}: AllocSites", run):
            return
        made = subprocess.run([COMMAND, "pprof", "--sites", "-o", folder / "sites.pb.gz", sites], capture_output=True,
                              text=True)
        check(made.returncode == 0, f"{label}: pprof --sites: {made.stderr}")
        raw = go_pprof(folder / "sites.pb.gz", "-raw")
        check("PeriodType: space bytes" in raw and
              "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]" in raw and
              "thread:[main]" in raw, f"{label}: Go's heap sample types, period type, thread labels:\n{raw[:1200]}")
        classes, traces, records = records_of(sites)
        by_thread = {}
        for row in hprof_records.alloc_sites(records)[-1][1]:
            if classes.get(row[1]) == "AllocSites$Item":
                thread = traces[row[2]][0]
                by_thread[thread] = by_thread.get(thread, 0) + row[6]
        main = go_pprof(folder / "sites.pb.gz", "-top", "-nodefraction=0", "-sample_index=alloc_objects",
                        "-tagfocus=thread=main")
        check(by_thread.get("main", 0) > 0 and flat(main, "AllocSites$Item") == str(by_thread["main"]),
              f"{label}: main's AllocSites$Item objects {by_thread}:\n{main[:1500]}")
    finally:
        cleanup(folder)


def cpu(jdk, home):
    label = f"{jdk} pprof cpu"
    needs_go()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-pprof-"))
    try:
        profile = folder / "cpu.hprof"
        run = run_java(home, agentpath(f"cpu=samples,thread=y,format=b,file={profile}"), main="CpuBusy",
                       args=["2", "1500"])
        if not check(run.code == 0, f"{label}: CpuBusy", run):
            return
        made = subprocess.run([COMMAND, "pprof", "-o", folder / "cpu.pb.gz", profile], capture_output=True, text=True)
        check(made.returncode == 0, f"{label}: pprof: {made.stderr}")
        _, traces, records = records_of(profile)
        spin = sum(count for _, _, rows in hprof_records.cpu_samples(records) for count, serial in rows
                   if traces[serial] == ("busy-0", "CpuBusy.spin"))
        top = go_pprof(folder / "cpu.pb.gz", "-top", "-nodefraction=0", "-sample_index=samples",
                       "-tagfocus=thread=busy-0")
        check(spin > 0 and flat(top, "CpuBusy.spin") == str(spin),
              f"{label}: busy-0's CpuBusy.spin samples, {spin}:\n{top[:1500]}")
        durations(label, "binary", go_pprof(folder / "cpu.pb.gz", "-raw"))
        # A text file's profile: its start and duration from the file's dates (to the second).
        text = folder / "cpu.txt"
        run = run_java(home, agentpath(f"cpu=samples,file={text}"), main="CpuBusy", args=["2", "1500"])
        made = subprocess.run([COMMAND, "pprof", "-o", folder / "text.pb.gz", text], capture_output=True, text=True)
        if check(run.code == 0 and made.returncode == 0, f"{label}: text run and pprof: {made.stderr}", run):
            durations(label, "text", go_pprof(folder / "text.pb.gz", "-raw"))
    finally:
        cleanup(folder)


def durations(label, kind, raw):
    """CpuBusy ran 1.5 s: the profile says when it started and about how long it lasted."""
    said = re.search(r"^Duration: ([\d.]+)(ms|s)?$", raw, re.M)
    seconds = float(said.group(1)) / (1000 if said.group(2) == "ms" else 1) if said else 0
    check(re.search(r"^Time: 20\d\d-", raw, re.M) and 1 <= seconds <= 30,
          f"{label}: the {kind} file's profile has a start time and a duration of the run ({seconds} s):\n{raw[:600]}")


run_cases("pprof_fleet", {"heap": on_each_jdk(heap), "cpu": on_each_jdk(cpu)})
