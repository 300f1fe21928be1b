#!/usr/bin/env python3
"""The lint tests can fail: each is run on a scratch copy of the tree with one defect planted (an
unnamed lock, a record tag left out of ARCHITECTURE.md, a patch that no longer applies, a product
file naming the planted regression, a runtime include that points up a floor or is bare), and must exit 1 naming it; on the unchanged copy each must pass."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
lints = root / "tests" / "lint"


def run(lint, tree):
    return subprocess.run([sys.executable, str(lints / lint), str(tree)], capture_output=True, text=True)


def append(path, text):
    path.write_text(path.read_text() + text)


def replace(path, old, new):
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"lints_catch_plants: {path} no longer holds {old!r}: update this test")
    path.write_text(text.replace(old, new, 1))


PLANTS = [
    ("architecture_is_current.py", "an unnamed lock", "PlantedLock::guard_",
     lambda t: append(t / "runtime" / "base" / "memory.h",
                      "\nnamespace fasthprof {\nclass PlantedLock {\n  std::mutex guard_;\n};\n}\n")),
    ("architecture_is_current.py", "a Java lock", "PLANTED_LOCK",
     lambda t: replace(next((t / "agent").rglob("FasthprofTracker.java")), "{\n",
                       "{\n    private static final Object PLANTED_LOCK = new Object();\n")),
    ("architecture_is_current.py", "a record left out of the Records table", "CPU SAMPLES",
     lambda t: replace(t / "docs" / "ARCHITECTURE.md", "| CPU SAMPLES |", "| CPU-SAMPLING |")),
    ("planted_patch_applies.py", "a patched line changed", "does not apply",
     lambda t: replace(t / "runtime" / "queues" / "allocation_recorder.h", "uint64_t key = ", "uint64_t key  = ")),
    ("planted_patch_applies.py", "the planted work in the product", "names the planted regression",
     lambda t: append(t / "runtime" / "base" / "memory.h", "\n// FASTHPROF_PLANTED_ALLOC_WORK\n")),
    ("runtime_floors.py", "an include that points up", "points up",
     lambda t: replace(t / "runtime" / "records" / "profile_output.h", '#include "records/report_rows.h"',
                       '#include "records/report_rows.h"\n#include "sections/site_table.h"')),
    ("runtime_floors.py", "a bare runtime include", "is bare",
     lambda t: replace(t / "agent" / "profiler.cpp", '#include "base/clock.h"', '#include "clock.h"')),
    ("runtime_floors.py", "a file outside the floors", "not in one of the floors",
     lambda t: (t / "runtime" / "planted.h").write_text("#pragma once\n")),
    ("sizes_are_bounded.py", "a function over 80 lines", "a function of",
     lambda t: append(t / "runtime" / "base" / "memory.cpp",
                      "\nnamespace fasthprof {\nint planted_long(int x) {\n" + "  x += 1;\n" * 90 + "  return x;\n}\n}\n")),
    ("sizes_are_bounded.py", "a file over 800 lines", "lines (at most 800)",
     lambda t: append(t / "hprof" / "id_set.h", "\n" + "// padding\n" * 820)),
]

failures = []
with tempfile.TemporaryDirectory(prefix="lint-plants-") as scratch:
    for number, (lint, what, expected, plant) in enumerate(PLANTS):
        tree = pathlib.Path(scratch) / str(number)
        for folder in ("agent", "runtime", "hprof", "tools", "docs", "tests"):
            shutil.copytree(root / folder, tree / folder, ignore=shutil.ignore_patterns("build*", "__pycache__", "corpus"))
        (tree / "bench").mkdir()
        shutil.copyfile(root / "bench" / "planted_regression.patch", tree / "bench" / "planted_regression.patch")
        clean = run(lint, tree)
        if clean.returncode != 0:
            failures.append(f"{lint} fails on the unchanged copy:\n{clean.stdout}{clean.stderr}")
            continue
        plant(tree)
        planted = run(lint, tree)
        caught = planted.returncode == 1 and expected in planted.stdout
        print(f"{lint}: {what}: {'caught' if caught else 'MISSED'}")
        if not caught:
            failures.append(f"{lint} did not catch {what} (exit {planted.returncode}):\n{planted.stdout}{planted.stderr}")
for failure in failures:
    print(failure)
sys.exit(1 if failures else 0)
