"""bench/run, its SQLite history and bench/dashboard (bench/README.md "bench/run").
  history:   documents recorded with `bench/run --record DB --from FILE` land in the runs and figures
             tables (schema version in PRAGMA user_version); a document without a fingerprint, a
             history of a newer schema, an SQLite file of something else: one message, exit 2,
             nothing recorded; `bench/dashboard` draws only the latest run's machine unless
             --fingerprint names another.
  runner:    the runner for real on the smallest benchmark (bench_interning of this build): the
             document's commit, machine and figures (the registry's units, min <= median <= max,
             one value per repetition), --record twice, --list and --targets, a bad --only.
  dashboard: a history of seven runs (six of this machine over five commits, one commit run twice;
             one of another machine) drawn by bench/dashboard and opened in headless chromium: every
             figure of the history has its plot with a point per commit at the median of its runs, a
             noise band per commit holding all its runs, the goal line where it has a goal, and no
             console message."""
import json
import math
import os
import pathlib
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile

from harness import browser, check, cleanup, run_cases, skip

SOURCE = pathlib.Path(os.environ.get("SOURCE_ROOT") or pathlib.Path(__file__).resolve().parents[2])
RUN = SOURCE / "bench" / "run"
DASHBOARD = SOURCE / "bench" / "dashboard"
# The build directory: the agent's is <build>/agent/libfasthprof.so.
BUILD = pathlib.Path(os.environ["FASTHPROF_AGENT"]).resolve().parents[1]
REGISTRY = json.loads((SOURCE / "bench" / "figures.json").read_text())


def tool(path, *args, timeout=300):
    return subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def fake_document(index, fingerprint="0123456789abcdef", figures=None):
    """A document of schema 1 with made-up figures that drift with index (plumbing only)."""
    figures = figures or sorted(REGISTRY)
    made = {}
    for n, name in enumerate(figures):
        entry = REGISTRY[name]
        base = (entry["goal"] or 1.0) * (0.9 + 0.03 * ((index + n) % 4))
        values = [base * (1 + 0.02 * k) for k in (-1, 0, 1)]
        made[name] = {"median": values[1], "min": values[0], "max": values[2], "runs": 3, "values": values,
                      "unit": entry["unit"], "better": entry["better"], "goal": entry["goal"],
                      "description": entry["description"]}
    return {"schema": 1, "commit": f"{index % 1000:040x}", "dirty": False, "date": f"2026-11-{10 + index:02d}T12:00:00Z",
            "quick": True, "machine": {"fingerprint": fingerprint, "cpus": 2, "cpu_model": "test CPU",
                                       "kernel": "6.1.0-test", "jdks": {"17": "17.0.15"}},
            "wall_seconds": 100.0 + index, "figures": made}


def record(folder, db, document, label):
    path = folder / f"{label}.json"
    path.write_text(json.dumps(document))
    return tool(RUN, "--record", db, "--from", path)


def record_runs(folder, db, count, what):
    """Records fake_document(0..count-1) of one machine, each checked."""
    for index in range(count):
        done = record(folder, db, fake_document(index), f"run{index}")
        check(done.returncode == 0, f"{what}: record run {index}: {done.stderr}")


def history_case():
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-benchhist-"))
    try:
        db = folder / "history.db"
        record_runs(folder, db, 3, "history")
        other = record(folder, db, fake_document(9, fingerprint="fedcba9876543210", figures=["alloc.overhead_ratio"]),
                       "other")
        check(other.returncode == 0, f"history: record another machine's run: {other.stderr}")
        connection = sqlite3.connect(db)
        check(connection.execute("PRAGMA user_version").fetchone()[0] == 1, "history: schema version 1")
        runs = connection.execute("SELECT commit_hash, fingerprint, cpus, kernel, jdks FROM runs ORDER BY id").fetchall()
        check(len(runs) == 4 and runs[0] == ("0" * 40, "0123456789abcdef", 2, "6.1.0-test", '{"17": "17.0.15"}'),
              f"history: four runs with their machine: {runs}")
        rows = connection.execute("SELECT name, median, min, max, runs, vals, better, goal FROM figures "
                                  "WHERE run_id = 2 AND name = 'alloc.overhead_ratio'").fetchall()
        expected = fake_document(1)["figures"]["alloc.overhead_ratio"]
        check(len(rows) == 1 and rows[0][1:5] == (expected["median"], expected["min"], expected["max"], 3)
              and json.loads(rows[0][5]) == expected["values"] and rows[0][6:] == ("lower", 1.1),
              f"history: a figure's row keeps median, min, max, runs, values, better, goal: {rows}")
        count = connection.execute("SELECT COUNT(*) FROM figures").fetchone()[0]
        check(count == 3 * len(REGISTRY) + 1, f"history: {count} figure rows")
        connection.close()

        # Bad input: one line, exit 2, the history unchanged.
        broken = fake_document(5)
        del broken["machine"]["fingerprint"]
        done = record(folder, db, broken, "broken")
        check(done.returncode == 2 and re.fullmatch(r"bench/run: the document has no machine fingerprint\n",
                                                    done.stderr), f"history: no fingerprint: {done.stderr!r}")
        done = record(folder, folder / "fresh.db", broken, "broken")
        check(done.returncode == 2 and not (folder / "fresh.db").exists(), "history: a bad document leaves no file")
        newer = folder / "newer.db"
        connection = sqlite3.connect(newer)
        connection.execute("PRAGMA user_version = 7")
        connection.close()
        done = record(folder, newer, fake_document(0), "again")
        check(done.returncode == 2 and "schema version 7, newer" in done.stderr and done.stderr.count("\n") == 1,
              f"history: a newer schema is refused: {done.stderr!r}")
        alien = folder / "alien.db"
        connection = sqlite3.connect(alien)
        connection.execute("CREATE TABLE t (x)")
        connection.close()
        done = record(folder, alien, fake_document(0), "alien")
        check(done.returncode == 2 and "not a benchmark history" in done.stderr, f"history: alien db: {done.stderr!r}")
        connection = sqlite3.connect(db)
        check(connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 4, "history: nothing recorded on error")
        connection.close()

        # The dashboard draws one machine: the latest run's (the other machine's, recorded last).
        out = folder / "page"
        done = tool(DASHBOARD, db, "-o", out)
        page = (out / "index.html").read_text() if done.returncode == 0 else ""
        check(done.returncode == 0 and page.count('<figure class="plot"') == 1 and "fedcba9876543210" in page,
              f"history: dashboard of the latest run's machine only: {done.stderr}")
        done = tool(DASHBOARD, db, "-o", out, "--fingerprint", "0123456789abcdef")
        page = (out / "index.html").read_text() if done.returncode == 0 else ""
        plots = re.findall(r'<figure class="plot" id="fig-([^"]+)"[^>]*data-runs="(\d+)"', page)
        check(done.returncode == 0 and sorted(plots) == sorted((name, "3") for name in REGISTRY),
              f"history: --fingerprint draws every figure of that machine over its 3 runs: {plots}")
        check(not re.search(r"(src|href)=\"?(https?:|//)|<script|<link", page), "history: the page fetches nothing")
        done = tool(DASHBOARD, db, "-o", out, "--fingerprint", "0000000000000000")
        check(done.returncode == 2 and "no run of machine 0000000000000000" in done.stderr,
              f"history: unknown fingerprint: {done.stderr!r}")
        done = tool(DASHBOARD, folder / "none.db", "-o", out)
        check(done.returncode == 2 and "no such file" in done.stderr and not (folder / "none.db").exists(),
              f"history: a missing history: {done.stderr!r}")
    finally:
        cleanup(folder)


def runner_case():
    if not (BUILD / "bench" / "bench_interning").exists():
        skip(f"{BUILD}/bench/bench_interning is not built (-Dbenchmarks=disabled)")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-benchrun-"))
    try:
        db = folder / "history.db"
        done = tool(RUN, "--build", BUILD, "--only", "interning", "--runs", "2", "--quick", "--json", "-",
                    "--record", db)
        check(done.returncode == 0, f"runner: bench/run --only interning: {done.stderr}")
        document = json.loads(done.stdout) if done.returncode == 0 else {}
        head = subprocess.run(["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        check(document.get("schema") == 1 and document.get("quick") is True
              and (document.get("commit") == head or not head), f"runner: schema, quick, commit {head}")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", document.get("date", "")) is not None,
              f"runner: UTC date {document.get('date')}")
        machine = document.get("machine", {})
        check(re.fullmatch(r"[0-9a-f]{16}", machine.get("fingerprint", "")) and machine.get("cpus") == os.cpu_count()
              and machine.get("kernel") == os.uname().release and machine.get("jdks", {}).get("17", "").startswith("17"),
              f"runner: machine {machine}")
        figures = document.get("figures", {})
        check(sorted(figures) == ["interning.hit_ns", "interning.miss_ns"], f"runner: figures {sorted(figures)}")
        for name, figure in figures.items():
            values = figure["values"]
            check(len(values) == 2 and figure["runs"] == 2 and all(v > 0 for v in values)
                  and figure["min"] == min(values) and figure["max"] == max(values)
                  and figure["min"] <= figure["median"] <= figure["max"],
                  f"runner: {name}: two positive values and their median, min, max: {figure}")
            check(all(figure[key] == REGISTRY[name][key] for key in ("unit", "better", "goal")),
                  f"runner: {name}: unit, better, goal from bench/figures.json")
        lines = [line for line in done.stderr.splitlines() if line.startswith("bench/run: interning ")]
        check(len(lines) == 2, f"runner: one progress line per repetition on stderr: {done.stderr}")
        # Only one figure, recorded a second time: two runs in the history, one machine.
        done = tool(RUN, "--build", BUILD, "--only", "interning.hit_ns", "--runs", "1", "--quick", "--record", db)
        check(done.returncode == 0 and "interning.hit_ns" in done.stdout and "interning.miss_ns" not in done.stdout,
              f"runner: --only a figure (progress and summary on stdout): {done.stdout} {done.stderr}")
        connection = sqlite3.connect(db)
        rows = connection.execute("SELECT r.id, r.fingerprint, f.name FROM runs r JOIN figures f ON f.run_id = r.id "
                                  "ORDER BY r.id, f.name").fetchall()
        connection.close()
        check([(r[0], r[2]) for r in rows] == [(1, "interning.hit_ns"), (1, "interning.miss_ns"), (2, "interning.hit_ns")]
              and {r[1] for r in rows} == {machine.get("fingerprint")}, f"runner: the history: {rows}")

        listed = tool(RUN, "--list")
        check(listed.returncode == 0 and all(name in listed.stdout for name in REGISTRY)
              and re.search(r"^alloc  \(quick\)$", listed.stdout, re.M) and re.search(r"^cpu_times$", listed.stdout, re.M),
              f"runner: --list names every figure and the quick set: {listed.stdout}")
        targets = tool(RUN, "--targets", "--quick")
        check(targets.returncode == 0 and "agent/libfasthprof.so" in targets.stdout.split()
              and "bench/bench_interning" in targets.stdout.split(), f"runner: --targets: {targets.stdout}")
        bad = tool(RUN, "--build", BUILD, "--only", "nosuch")
        check(bad.returncode == 2 and bad.stderr == "bench/run: --only nosuch: no benchmark or figure of that name "
              "(bench/run --list)\n", f"runner: a bad --only: {bad.stderr!r}")
        bad = tool(RUN, "--build", folder / "nobuild", "--only", "interning")
        check(bad.returncode == 2 and "no such build directory" in bad.stderr, f"runner: no build: {bad.stderr!r}")
    finally:
        cleanup(folder)


def dashboard_case():
    driver = browser()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-benchdash-"))
    try:
        db = folder / "history.db"
        record_runs(folder, db, 5, "dashboard")
        # Run 4's commit measured again, later and 10 % higher: still one point for that commit, at
        # the median of its two runs' medians, its band over both.
        again = fake_document(4)
        again["date"] = "2026-11-20T12:00:00Z"
        for figure in again["figures"].values():
            figure["values"] = [v * 1.1 for v in figure["values"]]
            figure["median"], figure["min"], figure["max"] = figure["values"][1], figure["values"][0], figure["values"][2]
        done = record(folder, db, again, "again")
        check(done.returncode == 0, f"dashboard: record commit 4 again: {done.stderr}")
        # Another machine's run, older: not drawn, named on the page.
        done = record(folder, db, fake_document(-5, fingerprint="fedcba9876543210"), "other")
        check(done.returncode == 0, f"dashboard: record the other machine: {done.stderr}")
        done = tool(DASHBOARD, db, "-o", folder / "page")
        check(done.returncode == 0, f"dashboard: bench/dashboard: {done.stderr}")
        driver.get((folder / "page" / "index.html").as_uri())
        # What the browser laid out, read in one round trip (each WebDriver call costs on this machine).
        drawn = driver.execute_script("""
            const box = e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
            return [...document.querySelectorAll('figure.plot')].map(plot => ({
              name: plot.dataset.figure,
              svg: box(plot.querySelector('svg')),
              points: [...plot.querySelectorAll('circle.point')].map(c => [Number(c.dataset.median), ...box(c)]),
              bands: [...plot.querySelectorAll('rect.band')].map(box),
              commits: [...plot.querySelectorAll('circle.point')].map(c => c.dataset.commit),
              goals: plot.querySelectorAll('line.goal').length,
              latest: plot.querySelector('p.latest').textContent}));""")
        check(sorted(p["name"] for p in drawn) == sorted(REGISTRY),
              f"dashboard: a plot per figure: {[p['name'] for p in drawn]}")
        for plot in drawn:
            name, points = plot["name"], plot["points"]
            check(plot["svg"][2] > 300 and plot["svg"][3] > 100, f"dashboard: {name}: drawn {plot['svg']}")
            check(len(points) == 5 and all(p[3] > 0 for p in points) and len(set(plot["commits"])) == 5,
                  f"dashboard: {name}: five points, one per commit of this machine (six runs): {points}")
            check(len(plot["bands"]) == 5 and all(b[3] > 0 for b in plot["bands"]),
                  f"dashboard: {name}: a noise band per commit: {plot['bands']}")
            # The twice-run commit's band reaches from its first run's least to its second's most.
            first = fake_document(4)["figures"][name]
            band, point = plot["bands"][4], points[4]
            check(band[1] < point[2] and band[1] + band[3] > point[2] + point[4],
                  f"dashboard: {name}: the twice-run commit's band holds its point: {band} {point}")
            # Left to right in the order of the commits, and a higher median drawn higher.
            expected = [f["median"] for f in (fake_document(i)["figures"][name] for i in range(4))]
            expected.append(statistics.median([first["median"], first["median"] * 1.1]))
            check(all(math.isclose(p[0], e, rel_tol=1e-9) for p, e in zip(points, expected)) and
                  all(a[1] < b[1] for a, b in zip(points, points[1:])),
                  f"dashboard: {name}: the commits' medians left to right: {points}, expected {expected}")
            check(all((a[0] < b[0]) == (a[2] > b[2]) for a, b in zip(points, points[1:]) if a[0] != b[0]),
                  f"dashboard: {name}: points at their medians {points}")
            goal = REGISTRY[name]["goal"]
            check(plot["goals"] == (0 if goal is None else 1), f"dashboard: {name}: goal line for goal {goal}")
            latest = plot["latest"]
            check((goal is None and "no goal" in latest) or (goal is not None and re.search(r"goal [≤≥] [\d.]+: (met|not met)$",
                                                                                            latest)),
                  f"dashboard: {name}: the latest value against its goal: {latest!r}")
        other = driver.execute_script("return document.getElementById('other-machines').textContent")
        check("fedcba9876543210" in other, "dashboard: the other machine is named, not drawn")
        shot = os.environ.get("FASTHPROF_DASHBOARD_SCREENSHOT")
        if shot:
            driver.set_window_size(1400, 3000)
            driver.save_screenshot(shot)
        logs = driver.get_log("browser")
        check(not logs, f"dashboard: no console message: {logs[:5]}")
    finally:
        driver.quit()
        cleanup(folder)


if __name__ == "__main__":
    run_cases("bench_run", {"history": history_case, "runner": runner_case, "dashboard": dashboard_case})
