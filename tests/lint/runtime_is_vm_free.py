#!/usr/bin/env python3
"""runtime/ must build and test without a JVM: no file there may include jvmti.h or jni.h
(or any other JDK header). Only agent/ talks to the VM."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
forbidden = {"jvmti.h", "jni.h", "jni_md.h", "jvmticmlr.h", "classfile_constants.h"}
problems = []
files = sorted(p for p in (root / "runtime").rglob("*") if p.suffix in {".h", ".hpp", ".cpp", ".cc"})
if not files:
    print(f"no sources found under {root / 'runtime'}")
    sys.exit(1)
for path in files:
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = include.match(line)
        if match and pathlib.PurePath(match.group(1)).name in forbidden:
            problems.append(f"{path.relative_to(root)}:{number}: includes {match.group(1)}")
    if re.search(r"\bJNIEnv\b|\bjvmtiEnv\b", path.read_text(errors="replace")):
        problems.append(f"{path.relative_to(root)}: names a JNI/JVMTI type")
for problem in problems:
    print(problem)
print(f"checked {len(files)} files in runtime/: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
