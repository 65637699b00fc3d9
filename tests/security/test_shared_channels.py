"""Kind: channels between workers (SysV shared memory and semaphores, /run/lock, /tmp,
/dev/shm, abstract unix sockets) and leftovers after close().
Case: ../shared/cases/sandbox/shared_ipc_and_run_lock.py."""

from __future__ import annotations

import os
import subprocess

KEY = 0x52544B00 + (os.getpid() % 0xFF)
PY = ("import ctypes;l=ctypes.CDLL(None);l.shmat.restype=ctypes.c_void_p;"
      f"i=l.shmget({KEY},1<<20,0o1666);p=l.shmat(i,None,0);")
WRITE = (f"python3 -c \"{PY}ctypes.memmove(p,b'from-w0',7)\"; "
         "for d in /run/lock /tmp /dev/shm /var/tmp; do echo from-w0 > $d/leak-$KEY; done; "
         "python3 -c \"import socket,time;s=socket.socket(socket.AF_UNIX);s.bind('\\0leak-$KEY');s.listen();"
         "print('listening')\" ")
READ = (f"python3 -c \"{PY}print('shm', ctypes.string_at(p,7) if p not in (None, 2**64-1) else b'')\"; "
        "for d in /run/lock /tmp /dev/shm /var/tmp; do cat $d/leak-$KEY 2>/dev/null; done; "
        "python3 -c \"import socket;s=socket.socket(socket.AF_UNIX);s.connect('\\0leak-$KEY');print('connected')\" "
        "2>/dev/null; true")


def test_workers_share_nothing(make_sb):
    sb = make_sb()
    sb.open_slot("w0", 60)
    sb.open_slot("w1", 60)
    env = WRITE.replace("$KEY", str(KEY))
    r0 = sb.run("w0", env)
    assert r0.exit_code == 0 and "listening" in r0.stdout, r0
    r = sb.run("w1", READ.replace("$KEY", str(KEY)))
    assert "from-w0" not in r.stdout and "connected" not in r.stdout, r
    sb.close()
    host = subprocess.run(f"ipcs -m | grep -i {KEY:08x}; ls /run/lock/leak-{KEY} /dev/shm/leak-{KEY} 2>/dev/null",
                          shell=True, capture_output=True, text=True).stdout
    assert host.strip() == "", host


def test_control_same_command_sees_its_own_segment(make_sb):
    """The read probe does work (within one command the segment is there)."""
    sb = make_sb()
    sb.open_slot("w0", 60)
    r = sb.run("w0", WRITE.replace("$KEY", str(KEY)) + "; " + READ.replace("$KEY", str(KEY)))
    assert "b'from-w0'" in r.stdout and "from-w0\n" in r.stdout, r
