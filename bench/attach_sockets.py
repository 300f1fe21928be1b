"""A JVM killed after something attached to it (jcmd, a dump by fork) leaves its attach socket
/tmp/.java_pid<pid> behind: the JVM removes it only on a clean exit. A benchmark that kills such
JVMs imports this module; at its exit the sockets made since it started whose process is gone are
removed (the integration tests' harness does the same)."""
import atexit
import os
import pathlib
import time

_STARTED = time.time()


def remove_dead_attach_sockets():
    for socket in pathlib.Path("/tmp").glob(".java_pid*"):
        try:
            pid = int(socket.name[len(".java_pid"):])
            if socket.lstat().st_mtime < _STARTED - 1:
                continue
            os.kill(pid, 0)
        except ProcessLookupError:
            socket.unlink(missing_ok=True)
        except (ValueError, OSError):
            continue


atexit.register(remove_dead_attach_sockets)
