"""`--json` of the verbs that print a table (summary, diff, verify), parsed here and checked against the
files' own records (hprof_records.py) and text sections, on real runs of JDK 17 and 25: CpuBusy
(cpu=samples, binary), AllocSites (heap=sites, binary) and MonitorScenes contend (monitor=y,
text)."""
import json
import os
import pathlib
import re
import subprocess
import tempfile

import hprof_records
from harness import agentpath, check, cleanup, on_each_jdk, run_cases, run_java

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")


def as_json(label, *args):
    """The parsed output of a verb with --json (None after a failed check), and its exit status."""
    done = subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300)
    try:
        return json.loads(done.stdout), done.returncode
    except json.JSONDecodeError as error:
        check(False, f"{label}: {' '.join(map(str, args[:3]))} prints JSON: {error}\n{done.stdout[:800]}{done.stderr}")
        return None, done.returncode


def json_checks(jdk, home):
    label = f"{jdk} --json"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-json-"))
    try:
        cpu_a, cpu_b, sites, monitor = (folder / n for n in ("a.hprof", "b.hprof", "sites.hprof", "m.txt"))
        runs = [run_java(home, agentpath(f"cpu=samples,format=b,file={cpu_a}"), main="CpuBusy", args=["2", "1000"]),
                run_java(home, agentpath(f"cpu=samples,format=b,file={cpu_b}"), main="CpuBusy", args=["2", "1000"]),
                run_java(home, agentpath(f"heap=sites,format=b,file={sites}"), main="AllocSites"),
                run_java(home, agentpath(f"monitor=y,file={monitor}"), main="MonitorScenes", args=["contend", "4", "10", "10"])]
        if not all(check(run.code == 0, f"{label}: the program ran", run) for run in runs):
            return
        _, _, _, records = hprof_records.read(cpu_a)
        samples = hprof_records.cpu_samples(records)
        summary, code = as_json(label, "summary", "--json", "--top", "0", cpu_a)
        if summary is not None:
            check(code == 0 and summary["format"] == "binary" and [s["total"] for s in summary["cpu"]] == [s[1] for s in samples]
                  and sum(r["count"] for r in summary["cpu"][0]["rows"]) == sum(c for c, _ in samples[0][2])
                  and summary["records"]["CPU SAMPLES"] == len(samples),
                  f"{label}: summary --json of CPU SAMPLES: the records' totals and rows:\n{str(summary)[:1500]}")
        by_method, _ = as_json(label, "summary", "--json", "--by", "method", "--top", "1", cpu_a)
        if by_method is not None:
            check(by_method["cpu"][0]["rows"][0]["method"] == "CpuBusy.spin" and len(by_method["cpu"][0]["rows"]) == 1,
                  f"{label}: --by method: CpuBusy.spin first, --top 1: {by_method['cpu']}")
        verified, code = as_json(label, "verify", "--json", "--strict", cpu_a, sites, monitor)
        text = subprocess.run([COMMAND, "verify", cpu_a], capture_output=True, text=True).stdout
        counted = {name: int(n) for name, n in re.findall(r"^  (\S.*?) +(\d+)$", text, re.M)}
        if verified is not None:
            first, second, third = verified["files"]
            check(code == 1 and first["ok"] and first["records"] == counted and first["heap_dumps"] == [] and
                  first["records"]["CPU SAMPLES"] == len(samples) and second["ok"] and second["file"] == str(sites) and
                  not third["ok"] and "text profile" in third["error"],
                  f"{label}: verify --json: the text summary's counts, a text file refused (exit {code}):\n"
                  f"{json.dumps(verified)[:1500]}\n{text}")
        _, _, _, records = hprof_records.read(sites)
        header, rows = hprof_records.alloc_sites(records)[-1]
        summary, _ = as_json(label, "summary", "--json", "--top", "3", sites)
        if summary is not None:
            last = summary["sites"][-1]
            check((last["live_bytes"], last["alloc_bytes"], last["sites"]) == (header[2], header[4], len(rows)) and
                  len(last["rows"]) == 3 and last["rows"][0]["live_bytes"] == max(r[3] for r in rows),
                  f"{label}: summary --json of SITES: the record's totals, --top 3 rows ranked: {last}")
        diff, code = as_json(label, "diff", "--json", "--top", "0", "--fail-if", "CpuBusy.spin:share>-100", cpu_a, cpu_b)
        if diff is not None:
            spin = [r for r in diff["rows"] if r["name"] == "CpuBusy.spin"]
            check(code == 1 and diff["kind"] == "cpu" and diff["metric"] == "share" and
                  len(diff["rows"]) == diff["rows_total"] and
                  abs(diff["total"]["a"]["share"] - 100) < 1e-9 and spin and spin[0]["a"]["count"] > 0 and
                  diff["fail_if"] == [{"expression": "CpuBusy.spin:share>-100", "met": True,
                                       "change": diff["fail_if"][0]["change"]}] and
                  re.fullmatch(r"[+-]\d+\.\d\d points", diff["fail_if"][0]["change"]) is not None,
                  f"{label}: diff --json: rows, total, fail_if met (exit {code}):\n{json.dumps(diff)[:1500]}")
        top, _ = as_json(label, "diff", "--json", "--top", "5", cpu_a, cpu_b)
        check(top is not None and len(top["rows"]) == 5 and top["rows_total"] > 5, f"{label}: diff --json --top 5")
        text = monitor.read_text()
        total = int(re.search(r"^MONITOR TIME BEGIN \(total = (\d+) ms\)", text, re.M).group(1))
        summary, _ = as_json(label, "summary", "--json", monitor)
        if summary is not None:
            section = summary["sections"][0]
            check(summary["format"] == "text" and section["title"] == "MONITOR TIME" and section["total"] == total and
                  section["rows"][0]["name"] == "MonitorScenes$Counter" and summary["monitor_dumps"],
                  f"{label}: summary --json of a text file: MONITOR TIME, MONITOR DUMP:\n{str(summary)[:1500]}")
        diff, code = as_json(label, "diff", "--json", "--monitor", monitor, monitor)
        if diff is not None:
            check(code == 0 and diff["kind"] == "monitor" and diff["rows"][0]["name"] == "MonitorScenes$Counter",
                  f"{label}: diff --json --monitor: {json.dumps(diff)[:800]}")
    finally:
        cleanup(folder)


run_cases("json_output", {"verbs": on_each_jdk(json_checks)})
