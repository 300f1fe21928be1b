#!/usr/bin/env python3
"""docs/ARCHITECTURE.md stays true to the code on two tables a reviewer relies on:
- Locks: every lock member that agent/ and runtime/ define (std::mutex and its kin, pthread
  mutexes and rwlocks, JVMTI raw monitors, and the tracker's Java lock objects) is named there as
  `Class::member` (`LOCK` for a Java lock);
- Records: every top-level record tag of runtime/base/hprof_format.h is named there by its HPROF name
  (record_tag_name() there, `case RecordTag::kX: return "NAME";`).
A lock or a record tag added without a line in ARCHITECTURE.md fails this test."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
doc = (root / "docs" / "ARCHITECTURE.md").read_text()
LOCK_TYPES = r"std::(?:mutex|shared_mutex|recursive_mutex|timed_mutex|recursive_timed_mutex)|pthread_mutex_t|pthread_rwlock_t|pthread_spinlock_t|jrawMonitorID"
lock_member = re.compile(rf"^\s*(?:mutable\s+)?(?:static\s+)?(?:inline\s+)?(?:{LOCK_TYPES})\s+(\w+)\s*(?:[;={{]|\[)")
class_open = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct)\s+(?:alignas\([^)]*\)\s+)?(\w+)(?:\s+final)?[^;]*$")
java_lock = re.compile(r"static\s+final\s+Object\s+(\w+)\s*=\s*new\s+Object\(\)")


def strip(line, state):
    """The line without comments and string literals; state carries an open block comment."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"], i = False, end + 2
        elif line.startswith("/*", i):
            state["block"], i = True, i + 2
        elif line.startswith("//", i):
            break
        elif line[i] in "\"'":
            quote, i = line[i], i + 1
            while i < len(line) and line[i] != quote:
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def cpp_locks(path):
    """(Class::member, line) for each lock member, the class found by brace depth."""
    found, stack, depth, pending, state = [], [], 0, None, {"block": False}
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = strip(raw, state)
        opened = class_open.match(line)
        if opened:
            pending = opened.group(1)
        member = lock_member.match(line)
        if member:
            owner = stack[-1][0] if stack else path.stem
            found.append((f"{owner}::{member.group(1)}", number))
        for ch in line:
            if ch == "{":
                depth += 1
                if pending:
                    stack.append((pending, depth))
                    pending = None
            elif ch == "}":
                if stack and stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
        if pending and line.rstrip().endswith(";"):
            pending = None
    return found


problems = []
sources = [p for folder in ("agent", "runtime") for p in sorted((root / folder).rglob("*"))
           if p.suffix in {".h", ".cpp"}]
locks = 0
for path in sources:
    for name, number in cpp_locks(path):
        locks += 1
        if f"`{name}`" not in doc and f"`{name} " not in doc and f"`{name}(" not in doc:
            problems.append(f"{path.relative_to(root)}:{number}: lock {name} is not in ARCHITECTURE.md's Locks table")
for path in sorted((root / "agent").rglob("*.java")):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for match in java_lock.finditer(line):
            locks += 1
            if f"`{match.group(1)}`" not in doc:
                problems.append(f"{path.relative_to(root)}:{number}: Java lock {match.group(1)} is not in ARCHITECTURE.md")

tags = re.findall(r"^\s*(k\w+)\s*=\s*0x[0-9A-Fa-f]+,", re.search(
    r"enum class RecordTag[^{]*\{(.*?)\};", (root / "runtime" / "base" / "hprof_format.h").read_text(), re.S).group(1), re.M)
format_header = (root / "runtime" / "base" / "hprof_format.h").read_text(errors="replace")
names = dict(re.findall(r"case\s+RecordTag::(k\w+):\s*return\s+\"([^\"]+)\"", format_header))
records = doc.split("## Records", 1)[-1].split("\n## ", 1)[0]
for tag in tags:
    name = names.get(tag)
    if name is None:
        problems.append(f"runtime/base/hprof_format.h: RecordTag::{tag} has no name (case RecordTag::{tag}: return \"...\")")
    elif not re.search(rf"(?<![A-Z]){re.escape(name)}(?! [A-Z])(?![A-Z0-9])", records):
        problems.append(f"runtime/base/hprof_format.h: record {name} (RecordTag::{tag}) is not in ARCHITECTURE.md's Records table")
for line in problems:
    print(line)
print(f"architecture_is_current: {locks} locks, {len(tags)} record tags, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
