"""`fasthprof flame`'s page in headless Chromium (Debian's chromium, chromium-driver and
python3-selenium; skipped without them): each feature of issue 29's flame page checked so that the
test fails when one is removed, on real runs of JDK 17 and 25:

- colours by frame kind: Java code of the program, JDK classes, native methods (line -3: a file written
  here as HotSpot's dumps write it; the agent's own runs mark their natives too, printed), the allocated
  class of a SITES icicle; each kind in its own hue range, named in the legend;
- a root per thread with thread=y (none with --no-threads);
- "(truncated at depth N)" under the stacks as deep as depth=;
- the reverse (callers) view: each method's own count at the root, its callers above;
- the root in view without scrolling, for stacks 300 frames deep.

FASTHPROF_FLAME_SCREENSHOTS=<folder> keeps a screenshot of each page there (else the scratch folder)."""
import colorsys
import os
import pathlib
import re
import struct
import subprocess
import tempfile

from harness import agentpath, browser, check, cleanup, on_each_jdk, run_cases, run_java

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")
# The hue range of each kind (flame_page.h's KINDS: base hue + 0..19).
HUES = {"0": (110, 130), "1": (200, 220), "2": (0, 20), "3": (30, 50), "4": (270, 290)}


def flame(*args):
    return subprocess.run([COMMAND, "flame", *map(str, args)], capture_output=True, text=True, timeout=300)


def hue(css):
    red, green, blue = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    return colorsys.rgb_to_hls(red, green, blue)[0] * 360


def native_file(path):
    """A binary file of one CPU SAMPLES section whose stacks end in app.Main.run (application),
    java.lang.Thread.sleep0 marked native (line -3) and java.util.HashMap.get (JDK)."""
    def record(tag, body):
        return struct.pack(">BII", tag, 0, len(body)) + body
    ids = {}
    out = [b"JAVA PROFILE 1.0.2\0" + struct.pack(">IQ", 8, 0), record(0x0E, struct.pack(">IH", 2, 4))]

    def utf8(text):
        if text not in ids:
            ids[text] = len(ids) + 1
            out.append(record(0x01, struct.pack(">Q", ids[text]) + text.encode()))
        return ids[text]
    frames = [("app.Main", "run", 10), ("java.lang.Thread", "sleep0", -3), ("java.util.HashMap", "get", 5)]
    for serial, (cls, method, line) in enumerate(frames, 1):
        out.append(record(0x02, struct.pack(">IQIQ", serial, 0x1000 + serial, 0, utf8(cls))))
        out.append(record(0x04, struct.pack(">QQQQIi", 0x100 + serial, utf8(method), utf8("()V"), utf8("X.java"),
                                            serial, line)))
    out.append(record(0x05, struct.pack(">IIIQQ", 300001, 0, 2, 0x102, 0x101)))
    out.append(record(0x05, struct.pack(">IIIQQ", 300002, 0, 2, 0x103, 0x101)))
    out.append(record(0x0D, struct.pack(">IIIIII", 30, 2, 20, 300001, 10, 300002)))
    pathlib.Path(path).write_bytes(b"".join(out))


class Page:
    def __init__(self, driver, path, shots, label):
        from selenium.webdriver.common.by import By
        self.driver, self.by = driver, By
        driver.get(pathlib.Path(path).as_uri())
        driver.save_screenshot(str(pathlib.Path(shots) / f"{label}-{pathlib.Path(path).stem}.png"))

    def frames(self):
        return self.driver.find_elements(self.by.CSS_SELECTOR, "#chart .frame")

    def rows(self):
        """[(name, kind, depth, width, background)] of the frames drawn, read in one script."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#chart .frame')].map(f => [f.dataset.name, f.dataset.kind,"
            " +f.dataset.depth, f.getBoundingClientRect().width, getComputedStyle(f).backgroundColor]);")

    def legend(self):
        return [s.get_attribute("data-kind") for s in self.driver.find_elements(self.by.CSS_SELECTOR, "#legend span")]


def kinds_and_colours(label, page, expect):
    """Every frame named in expect has that kind; every frame's colour is in its kind's hue range."""
    rows = page.rows()
    for name, kind in expect.items():
        found = {r[1] for r in rows if r[0] == name}
        check(found == {kind}, f"{label}: {name} is drawn as kind {kind}: {found}")
    wrong = [(r[0], r[1], round(hue(r[4]))) for r in rows if r[1] in HUES and
             not HUES[r[1]][0] - 1 <= hue(r[4]) <= HUES[r[1]][1] + 1]
    check(not wrong, f"{label}: each kind in its own colours: {wrong[:5]}")
    legend = page.legend()
    check(set(expect.values()) <= set(legend), f"{label}: the legend names the kinds drawn: {legend}")


def cpu_page(label, page, driver):
    rows = page.rows()
    threads = [r for r in rows if r[2] == 1]
    check(threads and all(r[1] == "4" and r[0].startswith("thread ") for r in threads) and
          {"thread busy-0", "thread busy-1"} <= {r[0] for r in threads}, f"{label}: a root per thread: {threads[:5]}")
    cut = [r for r in rows if r[0] == "(truncated at depth 3)"]
    check(cut and all(r[1] == "5" and r[2] == 2 for r in cut) and driver.find_elements(page.by.ID, "truncated"),
          f"{label}: stacks of depth 3 stand on (truncated at depth 3): {cut[:3]}")
    kinds_and_colours(label, page, {"CpuBusy.spin": "0", "thread busy-0": "4"})
    jdk = {r[1] for r in rows if r[0].startswith(("java.", "jdk."))}
    natives = sorted({r[0] for r in rows if r[1] == "2"})
    print(f"{label}: native frames drawn: {natives}")
    check(jdk <= {"1", "2"} and "1" in jdk, f"{label}: the JDK's frames are of kind 1 (2 when native): {jdk}")
    spin_share = sum(r[3] for r in rows if r[0] == "CpuBusy.spin") / max(r[3] for r in rows)
    driver.find_element(page.by.ID, "reverse").click()
    rows = page.rows()
    first = [r for r in rows if r[2] == 1]
    widest = max(first, key=lambda r: r[3]) if first else None
    check(driver.execute_script("return document.body.dataset.view") == "callers" and widest is not None and
          widest[0] == "CpuBusy.spin" and abs(widest[3] / max(r[3] for r in rows) - spin_share) < 0.02,
          f"{label}: Callers: CpuBusy.spin at the root with its share {spin_share:.3f}: {widest}")
    above = {r[0] for r in rows if r[2] == 2}
    check("CpuBusy.lambda$main$0" in above, f"{label}: Callers: spin's caller above it: {sorted(above)[:8]}")
    driver.find_element(page.by.ID, "reverse").click()
    check(driver.execute_script("return document.body.dataset.view") == "callees" and
          any(r[0] == "thread busy-0" and r[2] == 1 for r in page.rows()), f"{label}: Callees turns it back")


def page_checks(jdk, home):
    label = f"{jdk} flame page"
    driver = browser()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-flame-"))
    shots = os.environ.get("FASTHPROF_FLAME_SCREENSHOTS") or str(folder)
    os.makedirs(shots, exist_ok=True)
    try:
        busy, sites, deep = folder / "busy.hprof", folder / "sites.hprof", folder / "deep.hprof"
        runs = [run_java(home, agentpath(f"cpu=samples,thread=y,depth=3,format=b,file={busy}"), main="CpuBusy",
                         args=["2", "1500"]),
                run_java(home, agentpath(f"heap=sites,depth=8,format=b,file={sites}"), main="AllocSites"),
                run_java(home, agentpath(f"cpu=samples,depth=400,format=b,file={deep}"), main="DeepRecursion",
                         args=["300", "1500"])]
        if not all(check(run.code == 0, f"{label}: the program ran", run) for run in runs):
            return
        for source, extra in ((busy, []), (busy, ["--no-threads"]), (sites, ["--value", "alloc-bytes"]), (deep, [])):
            made = flame(*extra, "-o", folder / f"{source.stem}{''.join(extra)}.html", source)
            check(made.returncode == 0, f"{label}: flame {extra} {source.name}: {made.stderr}")
        cpu_page(label, Page(driver, folder / "busy.html", shots, jdk), driver)
        merged = Page(driver, folder / "busy--no-threads.html", shots, jdk).rows()
        check(merged and not [r for r in merged if r[1] == "4"], f"{label}: --no-threads: no thread roots")
        page = Page(driver, folder / "sites--valuealloc-bytes.html", shots, jdk)
        kinds_and_colours(label, page, {"AllocSites$Item": "3", "AllocSites.makeItems": "0"})
        page = Page(driver, folder / "deep.html", shots, jdk)
        root = driver.execute_script("const r = document.querySelector('#chart .frame[data-depth=\"0\"]')"
                                     ".getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight, "
                                     "document.querySelectorAll('#chart .frame').length];")
        check(root[3] > 300 and 0 <= root[0] and root[1] <= root[2],
              f"{label}: 300 frames deep, the root in view without scrolling: {root}")
        native_file(folder / "native.hprof")
        check(flame("-o", folder / "native.html", folder / "native.hprof").returncode == 0, f"{label}: flame native")
        page = Page(driver, folder / "native.html", shots, jdk)
        kinds_and_colours(label, page, {"java.lang.Thread.sleep0": "2", "app.Main.run": "0", "java.util.HashMap.get": "1"})
        logs = driver.get_log("browser")
        check(not logs, f"{label}: no console message: {logs[:5]}")
    finally:
        driver.quit()
        cleanup(folder)


run_cases("flame_page", {"page": on_each_jdk(page_checks)})
