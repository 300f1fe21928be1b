#!/usr/bin/env python3
"""Prints the build outputs (paths relative to the build directory) that the tests of the given
suites run or depend on, for `ninja -C BUILD $(tools/suite_targets.py BUILD SUITE...)`: a build
whose tests are a few suites (tools/test.sh's sanitizer build) then compiles no more than they use.
Ninja adds what those outputs are made from (libraries, generated sources).
Usage: tools/suite_targets.py BUILD_DIR SUITE..."""
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build, suites = os.path.abspath(sys.argv[1]), set(sys.argv[2:])

    def introspect(what):
        return json.loads(subprocess.check_output(["meson", "introspect", build, what]))

    targets = {target["id"]: target for target in introspect("--targets")}
    outputs = set()
    chosen = 0
    for test in introspect("--tests"):
        # Meson names a suite both `suite` and `project:suite`.
        if not suites & {name.split(":")[-1] for name in test["suite"]}:
            continue
        chosen += 1
        for target_id in test["depends"]:
            outputs.update(targets[target_id]["filename"])
        program = test["cmd"][0]
        if program.startswith(build + os.sep):
            outputs.add(program)
    if chosen == 0:
        sys.exit(f"suite_targets: no test of {build} is in the suites {sorted(suites)}")
    print(" ".join(sorted(os.path.relpath(path, build) for path in outputs)))


if __name__ == "__main__":
    main()
