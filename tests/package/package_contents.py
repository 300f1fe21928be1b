"""The Debian package's contents and dependencies (tools/package-test.sh runs it on the built .deb),
and after `dpkg -P` that nothing of it is left on the machine.

  package_contents.py DEB BUILD_ROOT   every file is one the package should hold (the agent, its
                                       libhprof.so link, the two commands, manual pages, completion,
                                       docs), none is missing, no file holds the path it was built
                                       in, Depends names only shared libraries the binaries link
  package_contents.py --purged DEB     the package is gone: its files, links, docs folder,
                                       maintainer scripts and the linker cache's entry"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                           check=True).stdout.strip()
LIBDIR = f"usr/lib/{MULTIARCH}"
REQUIRED = {
    "usr/bin/fasthprof", "usr/bin/hprof-verify",
    f"{LIBDIR}/fasthprof/libfasthprof.so", f"{LIBDIR}/libhprof.so",
    "usr/share/man/man1/fasthprof.1.gz", "usr/share/man/man1/hprof-verify.1.gz",
    "usr/share/man/man7/fasthprof-agent.7.gz",
    "usr/share/bash-completion/completions/fasthprof",
    "usr/share/doc/fasthprof/copyright", "usr/share/doc/fasthprof/changelog.gz",
    "usr/share/lintian/overrides/fasthprof",
}
# Beside the required files only the docs (README.md and docs/*.md, compressed or not).
DOCS = re.compile(r"usr/share/doc/fasthprof/[A-Za-z_.-]+\.md(\.gz)?")
# What the binaries may need: the C and C++ runtimes, jemalloc, xxHash, zlib, protobuf (the pprof verb).
ALLOWED_DEPENDS = {"libc6", "libgcc-s1", "libstdc++6", "libjemalloc2", "libxxhash0", "zlib1g", "libprotobuf32"}

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}", flush=True)


def entries(deb):
    """{path without ./: (type letter, link target or None)} for every entry but folders."""
    listing = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
    names = subprocess.run(["tar", "-tvf", "-"], input=listing, capture_output=True, check=True).stdout
    found = {}
    for line in names.decode().splitlines():
        kind, rest = line[0], line.split(None, 5)[5]
        if kind == "d":
            continue
        path, _, target = rest.partition(" -> ")
        found[path.removeprefix("./")] = (kind, target or None)
    return found


def depends(deb):
    field = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
    return {re.split(r"[\s(:]", part.strip())[0] for part in field.split(",") if part.strip()}


def check_contents(deb, build_root):
    found = entries(deb)
    for path in sorted(REQUIRED - found.keys()):
        check(False, f"the package holds /{path}")
    for path in sorted(found.keys() - REQUIRED):
        check(DOCS.fullmatch(path), f"/{path} belongs in the package (a test program, a build file?)")
    check(found.get(f"{LIBDIR}/libhprof.so") == ("l", "fasthprof/libfasthprof.so"),
          f"/{LIBDIR}/libhprof.so is a link to fasthprof/libfasthprof.so: {found.get(f'{LIBDIR}/libhprof.so')}")
    names = depends(deb)
    check(names <= ALLOWED_DEPENDS, f"Depends names only shared libraries the binaries need: {sorted(names)}")
    check({"libc6", "libjemalloc2"} <= names, f"Depends comes from the binaries' shared libraries: {sorted(names)}")
    with tempfile.TemporaryDirectory(prefix="fasthprof-deb-") as folder:
        subprocess.run(["dpkg-deb", "-x", deb, folder], check=True)
        marker = os.fsencode(build_root.rstrip("/"))
        for path in sorted(pathlib.Path(folder).rglob("*")):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if path.suffix == ".gz":
                    data = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=True).stdout
                check(marker not in data, f"/{path.relative_to(folder)} names the build folder {build_root}")


def check_purged(deb):
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "fasthprof"], capture_output=True, text=True)
    check(status.returncode != 0 or status.stdout.endswith("not-installed"),
          f"dpkg has forgotten fasthprof (no config-files state): {status.stdout}")
    for path in sorted(entries(deb)):
        check(not os.path.lexists("/" + path), f"/{path} is removed")
    for folder in ("/usr/share/doc/fasthprof", f"/{LIBDIR}/fasthprof"):
        check(not os.path.lexists(folder), f"{folder} is removed")
    left = sorted(str(p) for p in pathlib.Path("/var/lib/dpkg/info").glob("fasthprof.*"))
    check(not left, f"dpkg keeps no maintainer files: {left}")
    cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    check("fasthprof" not in cache, "the linker cache names no fasthprof library")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--purged":
        check_purged(sys.argv[2])
    elif len(sys.argv) == 3:
        check_contents(sys.argv[1], sys.argv[2])
    else:
        sys.exit(__doc__)
    if failures:
        print(f"package_contents: {len(failures)} failure(s)")
        sys.exit(1)
    print("package_contents: all checks passed")


if __name__ == "__main__":
    main()
