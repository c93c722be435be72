"""The exec service's bookkeeping, run on the host in a child process (no sandbox needed).

The child process matters: `Service.reap` waits for any child, so it must not run inside
pytest's own process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from docket.sandboxes.bwrap import execd

#: One namespace init that died at once (its fork refused), SIGCHLD seen before its status
#: pipe was read: the order the loop takes when both are ready (the wake fd polls first).
_INIT_REAPED_BEFORE_ITS_LINE = textwrap.dedent(
    """
    import json, os, selectors, socket, sys
    sys.path.insert(0, sys.argv[1])
    import execd

    host, ours = socket.socketpair()
    service = execd.Service(ours)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    init = os.fork()
    if init == 0:
        os._exit(0)
    reason = "fork the command: BlockingIOError: [Errno 11] Resource temporarily unavailable"
    os.write(write_end, f"init {init}\\nbusy {reason}\\n".encode())
    os.close(write_end)
    entry = execd._Exec(read_end, None)
    entry.id = 7
    service.execs[7] = entry
    service.selector.register(read_end, selectors.EVENT_READ, entry)
    os.waitid(os.P_PID, init, os.WEXITED | os.WNOWAIT)  # a zombie, its line unread
    service.reap()
    host.setblocking(False)
    try:
        message, _fds = execd.read_message(host)
    except BlockingIOError:
        message = None
    print(json.dumps({"message": message, "left": sorted(service.execs)}))
    """
)


def test_an_init_reaped_before_its_status_line_is_read_is_still_reported() -> None:
    """The hang of 40 concurrent execs at max_processes 4 under load (3 of 11 runs with 3 CPU
    hogs): the exec whose namespace init could not fork its command was never reported, so
    its caller waited out its timeout."""
    directory = str(Path(execd.__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", _INIT_REAPED_BEFORE_ITS_LINE, directory],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["left"] == []
    assert result["message"] == {
        "op": "exit",
        "id": 7,
        "setup": "fork the command: BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "busy": True,
    }
