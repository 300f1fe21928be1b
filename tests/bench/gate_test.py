#!/usr/bin/env python3
"""bench/gate's statistic and table on recorded documents (no build, no benchmark run).

Documents as bench/run writes them (schema 1), in a gate log (--log / --recorded), with values
spread as this machine's quick figures spread: a planted difference must be flagged (exit 1, a
FAIL row), equal sides and small or noisy differences passed (exit 0), documents of two machines
refused (exit 2). Usage: gate_test.py SOURCE_ROOT"""
import importlib.machinery
import importlib.util
import json
import pathlib
import random
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
GATE = ROOT / "bench" / "gate"
loader = importlib.machinery.SourceFileLoader("gate", str(GATE))
spec = importlib.util.spec_from_loader("gate", loader)
gate = importlib.util.module_from_spec(spec)
loader.exec_module(gate)

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}")


def document(figures, fingerprint="0123456789abcdef"):
    return {"schema": 1, "commit": "0" * 40, "dirty": False, "date": "2026-11-26T04:00:00Z", "quick": True,
            "machine": {"fingerprint": fingerprint, "cpus": 2},
            "figures": {name: {"median": value, "min": value, "max": value, "runs": 1, "values": [value],
                               "unit": unit, "better": better, "goal": None, "description": name}
                        for name, (value, unit, better) in figures.items()}}


def gate_log(pairs, base_of, head_of, fingerprints=None):
    entries = []
    for i in range(pairs):
        for side, values in (("base", base_of(i)), ("head", head_of(i))):
            fingerprint = (fingerprints or {}).get((i, side), "0123456789abcdef")
            entries.append({"pair": i, "side": side, "document": document(values, fingerprint)})
    return entries


def run_recorded(entries):
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "log.json"
        path.write_text(json.dumps(entries))
        proc = subprocess.run([sys.executable, str(GATE), "--recorded", str(path),
                               "--thresholds", str(ROOT / "bench" / "thresholds.json")],
                              capture_output=True, text=True)
    print(proc.stdout + proc.stderr)
    return proc


# The interval's rank and exact coverage (binomial, by hand): n = 5 has no 95 % interval.
check(gate.sign_interval_rank(5) == (0, 0.0), "n = 5 must have no 95 % interval")
k, coverage = gate.sign_interval_rank(6)
check(k == 1 and abs(coverage - (1 - 2 / 64)) < 1e-12, f"n = 6: rank {k}, coverage {coverage}")
k, coverage = gate.sign_interval_rank(10)
check(k == 2 and abs(coverage - (1 - 2 * 11 / 1024)) < 1e-12, f"n = 10: rank {k}, coverage {coverage}")
k, _ = gate.sign_interval_rank(20)
check(k == 6, f"n = 20: rank {k} (P(Bin(20,1/2) <= 5) = 2.07 %, <= 6 is 5.8 %)")

# compare_figure: a figure where lower is better and one where higher is better, both 30 % worse.
worse = gate.compare_figure([10.0] * 8, [13.0] * 8, "lower", 0.05)
check(worse["verdict"] == "FAIL" and abs(worse["change"] - 0.3) < 1e-9, f"lower-is-better 30 % worse: {worse}")
worse = gate.compare_figure([100.0] * 8, [100 / 1.3] * 8, "higher", 0.05)
check(worse["verdict"] == "FAIL", f"higher-is-better 30 % worse: {worse}")
better = gate.compare_figure([10.0] * 8, [7.0] * 8, "lower", 0.05)
check(better["verdict"] == "pass" and better["change"] < 0, f"an improvement must pass: {better}")
few = gate.compare_figure([10.0] * 5, [20.0] * 5, "lower", 0.05)
check(few["verdict"] == "too few", f"5 pairs give no verdict: {few}")

# Noise like this machine's quick figure (BM_OneCore: 16 ns, run-to-run spread about +-6 %, and a
# shared drift per pair), seeded so that the test is deterministic.
rng = random.Random(19)
drift = [rng.uniform(0.9, 1.25) for _ in range(8)]
base = [16.0 * drift[i] * rng.uniform(0.94, 1.06) for i in range(8)]
same = [16.0 * drift[i] * rng.uniform(0.94, 1.06) for i in range(8)]
planted = [16.0 * 1.5 * drift[i] * rng.uniform(0.94, 1.06) for i in range(8)]
slightly = [16.0 * 1.03 * drift[i] * rng.uniform(0.94, 1.06) for i in range(8)]
noisy = [16.0 * 1.08 * (1.6 if i % 2 else 0.7) * drift[i] for i in range(8)]


def quick(values):
    return lambda i: {"allocation.one_core_ns": (values[i], "ns", "lower"),
                      "interning.hit_ns": (9.0 * drift[i], "ns", "lower")}


proc = run_recorded(gate_log(8, quick(base), quick(planted)))
check(proc.returncode == 1, f"planted 50 %: exit {proc.returncode}, expected 1")
check(any(line.startswith("allocation.one_core_ns") and line.rstrip().endswith("FAIL")
          for line in proc.stdout.splitlines()), "planted: no FAIL row for allocation.one_core_ns")
check(any(line.startswith("interning.hit_ns") and line.rstrip().endswith("pass")
          for line in proc.stdout.splitlines()), "planted: interning.hit_ns, unchanged, must pass")
check("bench/gate: FAIL: allocation.one_core_ns got worse" in proc.stdout, "planted: no FAIL summary line")

for label, values in (("same build", same), ("3 % worse planted, under the 5 % threshold", slightly),
                      ("8 % worse in the median but inside the noise", noisy)):
    proc = run_recorded(gate_log(8, quick(base), quick(values)))
    check(proc.returncode == 0, f"{label}: exit {proc.returncode}, expected 0")
    check(proc.stdout.rstrip().endswith("bench/gate: pass"), f"{label}: no pass line")
results = gate.compare_documents(gate.pairs_from_log(gate_log(8, quick(base), quick(noisy))), {"default": 0.05})
check(results["allocation.one_core_ns"]["verdict"] == "noise",
      f"8 % worse inside the noise: verdict {results['allocation.one_core_ns']['verdict']}")

# A figure only in head's documents is reported, not gated.
proc = run_recorded(gate_log(8, quick(base), lambda i: {**quick(same)(i), "interning.miss_ns": (60.0, "ns", "lower")}))
check(proc.returncode == 0 and "not in base" in proc.stdout, "a new figure must be listed as not in base")

# Documents of two machines are not compared.
proc = run_recorded(gate_log(8, quick(base), quick(same), fingerprints={(3, "head"): "fedcba9876543210"}))
check(proc.returncode == 2 and "different machines" in proc.stderr, f"two machines: exit {proc.returncode}")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("bench/gate statistic and table: all checks passed")
