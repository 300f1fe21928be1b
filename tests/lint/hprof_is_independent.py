#!/usr/bin/env python3
"""hprof/ (the reader and the verifier) reads files the way other HPROF readers do, apart from the
code that writes them: of runtime/ it may include only base/hprof_format.h (the tag and type
constants) and base/byte_decoder.h (big-endian loads), and like runtime/ it never includes a JDK header."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
include = re.compile(r'^\s*#\s*include\s*"([^"]+)"|^\s*#\s*include\s*<([^>]+)>')
jdk_headers = {"jvmti.h", "jni.h", "jni_md.h", "jvmticmlr.h", "classfile_constants.h"}
runtime_headers = {p.relative_to(root / "runtime").as_posix() for p in (root / "runtime").rglob("*.h")}
allowed_from_runtime = {"base/hprof_format.h", "base/byte_decoder.h"}
files = sorted(p for p in (root / "hprof").rglob("*") if p.suffix in {".h", ".cpp"})
if not files or not runtime_headers:
    print(f"no sources found under {root / 'hprof'} or {root / 'runtime'}")
    sys.exit(1)
own_headers = {p.name for p in files if p.suffix == ".h"}
problems = []
for path in files:
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = include.match(line)
        if not match:
            continue
        written = match.group(1) or match.group(2)
        name = pathlib.PurePath(written).name
        if name in jdk_headers:
            problems.append(f"{path.relative_to(root)}:{number}: includes the JDK header {name}")
        elif match.group(1) and written not in own_headers and written not in allowed_from_runtime:
            where = "runtime/ (the writers' side)" if written in runtime_headers else "outside hprof/"
            problems.append(f"{path.relative_to(root)}:{number}: includes {written} from {where}")
for problem in problems:
    print(problem)
print(f"checked {len(files)} files in hprof/: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
