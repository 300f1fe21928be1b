"""The file the agent creates: default names, file=, force=n, mode 0600, the text header and the
binary header with CONTROL SETTINGS, each read back from a real run."""
import os
import re
import stat

import hprof_records
from harness import agentpath, check, finish, jdks, run_java, verify_binary

DATE = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}"

for label, home in jdks():
    # Text: default name java.hprof.txt, mode 0600, header, explanation, separator.
    run = run_java(home, agentpath("heap=sites"))
    path = run.file("java.hprof.txt")
    check(path.exists(), f"{label}: format=a writes java.hprof.txt by default", run)
    if path.exists():
        check(stat.S_IMODE(path.stat().st_mode) == 0o600, f"{label}: the text file is created 0600", run)
        text = path.read_text()
        check(re.match(rf"JAVA PROFILE 1\.0\.1, created {DATE}\n\n", text) is not None,
              f"{label}: text header line and empty line", run)
        check("\n--------\n\n" in text, f"{label}: the explanation ends with --------", run)
        head = text.split("\n--------\n\n")[0]
        for kind in ("THREAD START", "THREAD END", "TRACE", "HEAP DUMP", "ROOT", "CLS", "OBJ", "ARR",
                     "SITES", "CPU SAMPLES", "CPU TIME", "MONITOR TIME", "MONITOR DUMP"):
            check(kind in head, f"{label}: the explanation covers {kind}", run)
        check("Copyright" not in head, f"{label}: the explanation is our own text", run)

    # An existing file with another mode is replaced by a 0600 one (force=y, the default).
    folder = run.folder
    (folder / "mine.txt").write_text("old contents")
    os.chmod(folder / "mine.txt", 0o644)
    run = run_java(home, agentpath("file=mine.txt"), folder=str(folder))
    mode = stat.S_IMODE((folder / "mine.txt").stat().st_mode)
    check(mode == 0o600, f"{label}: force=y recreates an existing file with mode 0600 (got {oct(mode)})", run)
    check("old contents" not in (folder / "mine.txt").read_text(), f"{label}: force=y replaces the file", run)

    # force=n keeps the existing file and writes java.hprof.<pid>.txt next to it.
    run = run_java(home, agentpath("force=n"), folder=str(folder))
    unique = [p.name for p in folder.iterdir() if re.fullmatch(r"java\.hprof\.\d+\.txt", p.name)]
    check(len(unique) == 1, f"{label}: force=n picks java.hprof.<pid>.txt when java.hprof.txt exists: {unique}", run)

    # Binary: default name java.hprof, header, CONTROL SETTINGS, checked by our reader and the verifier.
    run = run_java(home, agentpath("format=b,heap=sites,cpu=samples,depth=7"))
    path = run.file("java.hprof")
    check(path.exists(), f"{label}: format=b writes java.hprof by default", run)
    if path.exists():
        check(stat.S_IMODE(path.stat().st_mode) == 0o600, f"{label}: the binary file is created 0600", run)
        version, id_size, millis, records = hprof_records.read(path)
        check(version == "JAVA PROFILE 1.0.2" and id_size == 8, f"{label}: binary header 1.0.2, id size 8", run)
        check(abs(millis / 1000 - path.stat().st_mtime) < 600, f"{label}: header time stamp is now", run)
        check(records and records[0].tag == 0x0E and records[0].body == bytes.fromhex("00000003" "0007"),
              f"{label}: first record CONTROL SETTINGS flags 3 depth 7", run)
        ok, output = verify_binary(path)
        check(ok, f"{label}: hprof-verify accepts the binary file:\n{output}", run)
    run = run_java(home, agentpath("format=b,heap=dump,file=dump.bin"))
    if run.file("dump.bin").exists():
        _, _, _, records = hprof_records.read(run.file("dump.bin"))
        check(records[0].body == bytes.fromhex("00000001" "0004"),
              f"{label}: CONTROL SETTINGS flags 1 depth 4 for heap=dump", run)
    else:
        check(False, f"{label}: file=dump.bin written", run)

    # net= to a port nobody listens on: the original's message and exit 1.
    run = run_java(home, agentpath("net=127.0.0.1:1"))
    check(run.code == 1 and "HPROF ERROR: can't connect to 127.0.0.1:1" in run.stderr,
          f"{label}: net= to a closed port says it cannot connect", run)
    # An uncreatable file: the original's message and exit 1.
    run = run_java(home, agentpath("file=/nonexistent-dir/x.txt"))
    check(run.code == 1 and "HPROF ERROR: can't create profile file: /nonexistent-dir/x.txt" in run.stderr,
          f"{label}: an uncreatable file is refused with the original's message", run)

finish("output_headers")
