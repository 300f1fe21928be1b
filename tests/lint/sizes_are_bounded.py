#!/usr/bin/env python3
"""Sizes a reader can hold: no source file of the tree over 800 lines (C++, Python, Java), and no
function of agent/ or runtime/ over 80 lines unless the comment just above it says why, with a
sentence that starts "Longer than" (a table, a state machine). Functions are found by their braces:
a block whose head has a parameter list, outside any other function."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
SOURCE_FOLDERS = ("agent", "runtime", "hprof", "tools", "tests", "bench")
FUNCTION_FOLDERS = ("agent", "runtime")
SUFFIXES = {".h", ".cpp", ".py", ".java"}


def without_comments_and_strings(text):
    """The text with comments and literals blanked, line breaks kept (so line numbers hold)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'R"(\w*)\((.*?)\)\1"', lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def long_functions(path):
    """(first line, length) of each function over the limit."""
    text = without_comments_and_strings(path.read_text(errors="replace"))
    found, stack, head, line = [], [], "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "{":
            last = head.strip().split("\n")[-1].strip()
            if any(kind == "function" for kind, _ in stack):
                kind = "inner"
            elif re.search(r"\b(namespace|class|struct|enum|union)\b[^()]*$", head) or head.rstrip().endswith("="):
                kind = "scope"
            elif "(" in head and not re.match(r"^(if|for|while|switch|else|do|catch)\b", last):
                kind = "function"
            else:
                kind = "scope"
            stack.append((kind, line))
            head = ""
        elif ch == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function" and line - start + 1 > MAX_FUNCTION_LINES:
                    found.append((start, line - start + 1))
            head = ""
        elif ch == ";":
            head = ""
        else:
            head += ch
    return found


def explained(lines, start):
    """Whether the comment block above the function's first line (or its signature) says why."""
    i = start - 1
    while i > 0 and not lines[i - 1].lstrip().startswith("//") and i > start - 4:
        i -= 1  # the signature may span a few lines
    block = []
    while i > 0 and lines[i - 1].lstrip().startswith("//"):
        block.append(lines[i - 1])
        i -= 1
    return any("Longer than" in comment for comment in block)


problems = []
files = [p for folder in SOURCE_FOLDERS for p in sorted((root / folder).rglob("*"))
         if p.suffix in SUFFIXES and "corpus" not in p.parts and not any(part.startswith("build") for part in p.parts)]
for path in files:
    lines = path.read_text(errors="replace").split("\n")
    count = len(lines) - (1 if lines and lines[-1] == "" else 0)
    if count > MAX_FILE_LINES:
        problems.append(f"{path.relative_to(root)}: {count} lines (at most {MAX_FILE_LINES})")
    if path.suffix in {".h", ".cpp"} and path.parts[len(root.parts)] in FUNCTION_FOLDERS:
        for start, length in long_functions(path):
            if not explained(lines, start):
                problems.append(f"{path.relative_to(root)}:{start}: a function of {length} lines (at most "
                                f"{MAX_FUNCTION_LINES}, or a comment above it that says why: \"Longer than ...\")")
for problem in problems:
    print(problem)
print(f"sizes_are_bounded: {len(files)} files, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
