"""Links and existing files at the output's name: the default name never writes through a link
(force=y replaces the link itself, force=n picks a free unique name, created with O_EXCL), and a
planted link at the force=n unique name is never followed either. A link the user names with
file= is followed: that is the file the user chose (file=/dev/stdout is a link too)."""
import os
import pathlib
import stat
import subprocess
import tempfile

from harness import TEST_CLASSES, agentpath, check, cleanup, finish, jdks, run_java

SECRET = "the link's target: must stay as it is\n"


def scratch():
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-it-"))
    target = folder / "target.txt"
    target.write_text(SECRET)
    os.chmod(target, 0o644)
    return folder, target


def untouched(target):
    return target.read_text() == SECRET and stat.S_IMODE(os.stat(target).st_mode) == 0o644


for label, home in jdks():
    # force=y (the default) with the default name: the link goes, its target stays.
    folder, target = scratch()
    try:
        os.symlink(target, folder / "java.hprof.txt")
        run = run_java(home, agentpath("heap=sites"), folder=str(folder))
        check(run.code == 0, f"{label}: a link at the default name does not stop the VM", run)
        check(untouched(target), f"{label}: force=y leaves the target of a link at the default name alone", run)
        output = folder / "java.hprof.txt"
        check(not output.is_symlink() and output.read_text().startswith("JAVA PROFILE 1.0.1"),
              f"{label}: force=y writes a new java.hprof.txt in place of the link", run)
        check(stat.S_IMODE(os.lstat(output).st_mode) == 0o600, f"{label}: and creates it 0600", run)
    finally:
        cleanup(folder)

    # A dangling link at the default name creates nothing where it points.
    folder, target = scratch()
    try:
        os.symlink(folder / "made-through-link", folder / "java.hprof")
        run = run_java(home, agentpath("heap=dump,format=b"), folder=str(folder))
        check(run.code == 0 and not (folder / "made-through-link").exists(),
              f"{label}: a dangling link at the default name is not followed", run)
    finally:
        cleanup(folder)

    # force=n: the default name exists, and a link waits at the predictable unique name
    # java.hprof.<pid>.txt (planted by a shell that then becomes the JVM, keeping its pid).
    folder, target = scratch()
    try:
        (folder / "java.hprof.txt").write_text("an earlier run's output\n")
        wrapper = folder / "plant.sh"
        wrapper.write_text("#!/bin/sh\n"
                           f"ln -s '{target}' \"java.hprof.$$.txt\"\n"
                           f"exec '{home}/bin/java' \"$@\"\n")
        os.chmod(wrapper, 0o755)
        proc = subprocess.run([str(wrapper), agentpath("heap=sites,force=n"), "-cp", TEST_CLASSES,
                               "HelloThreads"], cwd=folder, capture_output=True, text=True, timeout=120)
        check(proc.returncode == 0, f"{label}: force=n with a planted link still runs\n{proc.stderr}")
        check(untouched(target), f"{label}: force=n never follows a link at its unique name\n{proc.stderr}")
        check((folder / "java.hprof.txt").read_text() == "an earlier run's output\n",
              f"{label}: force=n keeps the existing file\n{proc.stderr}")
        written = sorted(p.name for p in folder.iterdir()
                         if p.name.startswith("java.hprof.") and not p.is_symlink() and p.name != "java.hprof.txt")
        check(len(written) == 1 and written[0].endswith(".1.txt") and
              (folder / written[0]).read_text().startswith("JAVA PROFILE 1.0.1"),
              f"{label}: force=n takes the next numbered name, java.hprof.<pid>.1.txt: {written}\n{proc.stderr}")
    finally:
        cleanup(folder)

    # file= naming a link: followed, as named.
    folder, target = scratch()
    try:
        os.symlink(target, folder / "chosen.txt")
        run = run_java(home, agentpath("heap=sites,file=chosen.txt"), folder=str(folder))
        check(run.code == 0 and (folder / "chosen.txt").is_symlink() and
              target.read_text().startswith("JAVA PROFILE 1.0.1"),
              f"{label}: file= naming a link writes to the file it names", run)
    finally:
        cleanup(folder)

finish("output_links")
