#!/usr/bin/env python3
"""runtime/ is built in floors, one folder per layer, listed lowest first as `runtime_floors` in
runtime/meson.build. Every runtime source lives in one of those folders; a runtime header is
included by its folder ("sink/async_sink.h"), never bare, from anywhere in the tree; and a runtime
file includes only headers of its own floor or of a floor below it. Exit 1 naming each include
that points up, each bare include and each file outside a floor."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
runtime = root / "runtime"
listing = re.search(r"runtime_floors\s*=\s*\[(.*?)\]", (runtime / "meson.build").read_text(), re.S)
if not listing:
    print("runtime/meson.build: no runtime_floors = [...] list")
    sys.exit(1)
floors = re.findall(r"'([a-z_]+)'", listing.group(1))
rank = {floor: number for number, floor in enumerate(floors)}

problems = []
headers = {}  # file name -> floor
for path in sorted(runtime.rglob("*")):
    if path.suffix not in {".h", ".cpp"}:
        continue
    relative = path.relative_to(runtime)
    if len(relative.parts) != 2 or relative.parts[0] not in rank:
        problems.append(f"runtime/{relative}: not in one of the floors {floors}")
        continue
    if path.suffix == ".h":
        headers[path.name] = relative.parts[0]

include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
sources = [p for folder in ("runtime", "agent", "hprof", "tools", "tests", "bench")
           for p in sorted((root / folder).rglob("*"))
           if p.suffix in {".h", ".cpp"} and "build" not in p.relative_to(root).parts[0]]
for path in sources:
    where = path.relative_to(root)
    own_floor = None
    if where.parts[0] == "runtime" and len(where.parts) == 3 and where.parts[1] in rank:
        own_floor = where.parts[1]
    for name in include.findall(path.read_text(errors="replace")):
        parts = name.split("/")
        if len(parts) == 1 and name in headers:
            problems.append(f"{where}: #include \"{name}\" is bare: write \"{headers[name]}/{name}\"")
            continue
        if len(parts) != 2 or parts[0] not in rank or headers.get(parts[1]) != parts[0]:
            continue
        if own_floor is not None and rank[parts[0]] > rank[own_floor]:
            problems.append(f"{where}: #include \"{name}\" points up (floor {own_floor} "
                            f"includes {parts[0]}, which is above it)")

for problem in problems:
    print(problem)
print(f"checked {len(sources)} files against {len(floors)} floors: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
