#!/usr/bin/env python3
"""The regression gate's proof (bench/README.md "The regression gate"), not part of `meson test`'s
default run: `meson test -C build --benchmark --suite gate-proof`, or by hand:

  tests/bench/gate_proof.py [--planted N] [--planted-tries 10] [--same-tries 20] [--workdir DIR]

Builds the current commit three times from `git archive` (base; a second, independent build of the
same commit; the planted build: bench/planted_regression.patch applied, N steps of extra work per
allocation event),
then runs bench/gate on the quick set, alternating try by try: base against the second build (must
pass) and base against the planted build (must fail). The builds are shared by the tries; every try
is a whole gate run (its own interleaved pairs, its own statistic). Prints the rates and each try's
change and interval; exits 1 when planted < 9/10 or same < 19/20 (scaled to the tries asked)."""
import argparse
import importlib.machinery
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
GATE = ROOT / "bench" / "gate"
PLANTED_PATCH = ROOT / "bench" / "planted_regression.patch"
loader = importlib.machinery.SourceFileLoader("gate", str(GATE))
spec = importlib.util.spec_from_loader("gate", loader)
gate = importlib.util.module_from_spec(spec)
loader.exec_module(gate)


def pooled_pairs(logs, figure):
    """(base, head) values of every pair of the same-commit tries kept in LOGS."""
    pairs = []
    for path in sorted(logs.glob("try-*-same.json")):
        for base, head in gate.pairs_from_log(json.loads(path.read_text())):
            pairs.append((base["figures"][figure]["median"], head["figures"][figure]["median"]))
    return pairs


def detectable(logs, figure, threshold, sizes=(8, 12, 16), shifts=(0.0, 0.05, 0.10, 0.20, 0.30, 0.50, 1.0, 4.0),
               draws=2000):
    """The gate's verdict on this machine's measured noise with a regression added: pairs drawn
    (with replacement) from the same-commit tries' pairs, head values times (1 + shift); the share
    of draws the gate fails, per number of pairs. The smallest shift failed in >= 90 % of draws is
    the smallest regression the gate detects here."""
    import random
    pool = pooled_pairs(logs, figure)
    if len(pool) < 8:
        return
    rng = random.Random(19)
    print(f"{figure}: {len(pool)} measured same-commit pairs; gate failures per {draws} draws "
          f"(threshold {100 * threshold:.0f} %), by added regression:")
    print("  pairs  " + "  ".join(f"{100 * shift:+5.0f} %" for shift in shifts))
    for n in sizes:
        rates = []
        for shift in shifts:
            failed = 0
            for _ in range(draws):
                drawn = [rng.choice(pool) for _ in range(n)]
                verdict = gate.compare_figure([b for b, _ in drawn], [h * (1 + shift) for _, h in drawn],
                                              "lower", threshold)["verdict"]
                failed += verdict == "FAIL"
            rates.append(failed / draws)
        print(f"  {n:5}  " + "  ".join(f"{100 * rate:6.1f}%" for rate in rates))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--planted", type=int, default=54,
                        help="steps per allocation event of bench/planted_regression.patch (default 54)")
    parser.add_argument("--planted-tries", type=int, default=10)
    parser.add_argument("--same-tries", type=int, default=20)
    parser.add_argument("--analyse", type=pathlib.Path, metavar="LOGS",
                        help="no builds, no runs: the detectable regression from the documents kept in LOGS")
    parser.add_argument("--runner", type=pathlib.Path, default=ROOT / "bench" / "run")
    parser.add_argument("--workdir", type=pathlib.Path, help="reuse or keep the three builds here")
    parser.add_argument("--json", type=pathlib.Path, help="write every try's verdicts here")
    parser.add_argument("--logs", type=pathlib.Path,
                        help="keep each try's documents here (try-NN-LABEL.json, for bench/gate --recorded)")
    args = parser.parse_args()
    if args.analyse:
        config = json.loads((ROOT / "bench" / "thresholds.json").read_text())
        for figure in config["quick"]:
            detectable(args.analyse, figure, gate.thresholds_for(config, figure))
        return 0
    commit = gate.resolve("HEAD")
    config = json.loads((ROOT / "bench" / "thresholds.json").read_text())
    names = list(config["quick"])
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-gate-proof-"))
    options = {"base": [], "same": [], "planted": [f"-Dcpp_args=-DFASTHPROF_PLANTED_ALLOC_WORK={args.planted}"]}
    patches = {"planted": [PLANTED_PATCH]}
    builds = {}
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    try:
        targets = gate.targets_for(args.runner, names, True)
        for label, extra in options.items():
            build = workdir / label / "build"
            if not (build / "build.ninja").exists():
                shutil.rmtree(workdir / label, ignore_errors=True)
                build = gate.setup(commit, workdir / label, ["-Dtests=disabled", *extra], patches.get(label, []))
            gate.compile_targets(build, targets, 2, f"{label} ({commit[:12]} {' '.join(extra)})")
            builds[label] = build
        tries = []
        started = time.monotonic()
        for i in range(max(args.planted_tries, args.same_tries)):
            for label, wanted in (("same", args.same_tries), ("planted", args.planted_tries)):
                if i >= wanted:
                    continue
                began = time.monotonic()
                with tempfile.NamedTemporaryFile(suffix=".json") as out:
                    proc = subprocess.run([sys.executable, str(GATE), "HEAD", "HEAD", "--runner", str(args.runner),
                                           "--base-build", str(builds["base"]), "--head-build", str(builds[label]),
                                           "--json", out.name,
                                           *(["--log", str(args.logs / f"try-{i + 1:02}-{label}.json")] if args.logs else [])],
                                          capture_output=True, text=True)
                    verdicts = json.loads(pathlib.Path(out.name).read_text() or "{}") if proc.returncode in (0, 1) else {}
                if proc.returncode not in (0, 1):
                    sys.exit(f"gate try {i + 1} ({label}) could not run (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
                figure = verdicts["figures"][names[0]]
                tries.append({"label": label, "status": proc.returncode, "seconds": round(time.monotonic() - began, 1),
                              "figures": verdicts["figures"]})
                print(f"try {i + 1:2} {label:7} exit {proc.returncode}  {names[0]} base {figure['base']:.2f} "
                      f"head {figure['head']:.2f} change {100 * figure['change']:+.1f} % interval "
                      f"{100 * figure['low']:+.1f} .. {100 * figure['high']:+.1f} %  ({time.monotonic() - began:.0f} s)",
                      flush=True)
        if args.json:
            args.json.write_text(json.dumps(tries, indent=1))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    caught = sum(1 for t in tries if t["label"] == "planted" and t["status"] == 1)
    passed = sum(1 for t in tries if t["label"] == "same" and t["status"] == 0)
    same_changes = sorted(t["figures"][names[0]]["change"] for t in tries if t["label"] == "same")
    planted_changes = sorted(t["figures"][names[0]]["change"] for t in tries if t["label"] == "planted")
    print(f"planted (planted_regression.patch, {args.planted} steps): gate failed {caught}/{args.planted_tries}; "
          f"change {100 * planted_changes[0]:+.1f} .. {100 * planted_changes[-1]:+.1f} %" if planted_changes else "")
    print(f"same commit, two builds: gate passed {passed}/{args.same_tries}; change "
          f"{100 * same_changes[0]:+.1f} .. {100 * same_changes[-1]:+.1f} %" if same_changes else "")
    print(f"{len(tries)} gate runs in {time.monotonic() - started:.0f} s")
    if args.logs:
        detectable(args.logs, names[0], gate.thresholds_for(config, names[0]))
    ok = caught * 10 >= 9 * args.planted_tries and passed * 20 >= 19 * args.same_tries
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
