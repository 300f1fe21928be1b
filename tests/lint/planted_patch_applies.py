#!/usr/bin/env python3
"""The regression gate's planted regression lives outside the product: bench/planted_regression.patch,
which bench/gate applies to the tree it builds (--head-patch). This test fails when the patch no
longer applies to the sources it touches (a change there must carry the patch along), and when the
product's own code names the planted work (the hook would be back in the allocation path)."""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
patch = root / "bench" / "planted_regression.patch"
touched = re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(), re.MULTILINE)
if not touched:
    sys.exit(f"{patch}: names no file to patch")
problems = []
with tempfile.TemporaryDirectory(prefix="planted-patch-") as scratch:
    for name in touched:
        source = root / name
        if not source.is_file():
            problems.append(f"{patch.name} patches {name}, which is not in the tree")
            continue
        (pathlib.Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, pathlib.Path(scratch) / name)
    if not problems:
        proc = subprocess.run(["git", "apply", "--check", "-p1", str(patch)], cwd=scratch,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            problems.append(f"{patch.name} does not apply: {proc.stderr.strip()}")
for folder in ("runtime", "agent", "hprof", "tools"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix in {".h", ".cpp", ".build", ".txt"} and "PLANTED" in path.read_text(errors="replace"):
            problems.append(f"{path.relative_to(root)} names the planted regression: it belongs in {patch.name}")
for line in problems:
    print(line)
print(f"planted_patch_applies: {len(touched)} file(s) patched, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
