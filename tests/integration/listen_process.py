"""A running `fasthprof listen --stay` for the tests (net_commands.py, listen_streams.py): its
stdout lines in a queue to expect() patterns from, commands to its stdin, and an orderly stop."""
import os
import pathlib
import queue
import re
import resource
import subprocess
import threading
import time

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")


class Listen:
    def __init__(self, folder, *extra, file_size_limit=None):
        limit = None
        if file_size_limit is not None:
            limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))  # noqa: E731
        self.proc = subprocess.Popen([COMMAND, "listen", "--port", "0", "--dir", str(folder), "--stay", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, preexec_fn=limit)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.port = int(self.expect(r"listening on 127\.0\.0\.1:(\d+)").group(1))

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, pattern, timeout=60):
        """The first line (kept from before, or new) that matches pattern; lines passed over are
        kept for a later expect()."""
        deadline = time.time() + timeout
        for line in self.seen:
            found = re.search(pattern, line)
            if found:
                self.seen.remove(line)
                return found
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            if line is None:
                break
            found = re.search(pattern, line)
            if found:
                return found
            self.seen.append(line)
        raise AssertionError(f"fasthprof listen never printed {pattern!r}; it printed {self.seen[-20:]}"
                             f" (exit {self.proc.poll()})")

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def rss_kib(self):
        status = pathlib.Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))

    def stop(self):
        """quit, then the exit status and everything it wrote on stderr."""
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except BrokenPipeError:
                pass
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return code, self.proc.stderr.read()
