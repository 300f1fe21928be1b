"""The generated manual pages and bash completion (tools/man/make_manuals.py) against the programs
they describe: every verb of `fasthprof help` has its section in fasthprof(1) and is completed,
every option of the agent's table is in fasthprof-agent(7), each page formats without a warning
from man (lintian's check), and bash completes a verb and an option from the generated file.
usage: manuals_test.py FASTHPROF OPTION_ROWS MAN_FOLDER (the build's tools/man)"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}", flush=True)


def complete(completion, words):
    script = (f"source {completion}; COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; "
              "_fasthprof; printf '%s\\n' \"${COMPREPLY[@]}\"")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout.split()


def check_pages(fasthprof, option_rows, folder):
    verbs = re.findall(r"^  (\S+) ", subprocess.run([fasthprof, "help"], capture_output=True, text=True).stdout,
                       re.M)
    check(len(verbs) >= 8, f"fasthprof help lists its verbs: {verbs}")
    command_page = (folder / "fasthprof.1").read_text()
    for verb in verbs:
        check(f".SS {verb}\n" in command_page, f"fasthprof(1) has a section for the verb {verb}")
    agent_page = (folder / "fasthprof-agent.7").read_text()
    rows = subprocess.run([option_rows], capture_output=True, text=True, check=True).stdout.splitlines()
    for row in rows:
        block, name, *_, removed = row.split("\t")
        if removed == "0":
            troff_name = name.replace("-", "\\-")
            check(f"\\fB{troff_name}=" in agent_page, f"fasthprof-agent(7) has the {block} option {name}")
    return verbs


def check_formatting(folder):
    if shutil.which("man") is None:
        print("SKIP: man is not installed: the pages' formatting is not checked", flush=True)
        return
    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH="80")
    for page in ("fasthprof.1", "hprof-verify.1", "fasthprof-agent.7"):
        result = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", str(folder / page)],
                                capture_output=True, text=True, env=env)
        check(result.returncode == 0 and not result.stderr.strip(),
              f"{page} formats without a warning:\n{result.stderr}")


def check_completion(completion, verbs):
    check(subprocess.run(["bash", "-n", str(completion)]).returncode == 0, "the completion is valid bash")
    check(complete(completion, ["fasthprof", "ver"]) == ["verify"], "fasthprof ver completes to verify")
    offered = [word for word in complete(completion, ["fasthprof", "''"]) if not word.startswith("-")]
    check(sorted(offered) == sorted(verbs + ["help"]), f"the verbs of `fasthprof help` are completed: {offered}")
    check(complete(completion, ["fasthprof", "attach", "--dur"]) == ["--duration"], "attach --dur completes")
    check("--fail-if" in complete(completion, ["fasthprof", "diff", "--"]), "diff's options are completed")


def main():
    fasthprof, option_rows, folder = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    verbs = check_pages(fasthprof, option_rows, folder)
    check_formatting(folder)
    check_completion(folder / "fasthprof", verbs)
    if failures:
        print(f"manuals: {len(failures)} failure(s)")
        sys.exit(1)
    print("manuals: all checks passed")


if __name__ == "__main__":
    main()
