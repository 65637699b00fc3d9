"""Anti-cheat for SCARCE task grading: a submission must not wrap, copy or call the
original program (the shipped tasks come from programs installed on the machine).

Two layers; either one finding scores the submission 0 with a ``violation`` text.

1. Static (:func:`check_submission`, before building), on the submitted files:
   * a file byte-identical to the original, or containing sampled 48-byte windows of
     it (3 of 8: catches a copy with bytes appended or patched);
   * (ELF files other than copies of the original are build artifacts: not flagged,
     and :func:`scarce_lab.tasks.grading.grade` does not copy them to the build);
   * the original's path as text (``/usr/bin/rev``, ``/bin/rev``, ``program_path``);
   * in shell files (``*.sh``, ``Makefile``, files with an ``sh``/``bash`` shebang):
     the program name at a command position (line start, after ``; & | ( ` $(``, or
     after ``exec``/``command``/``env``/``xargs``/``which``/``timeout N``...), or as
     a file operand of ``cp``/``mv``/``ln``/``cat``/``install``/``dd`` (copying the
     workspace copy of the original);
   * in other sources: the name as the first word of a string literal passed to a
     process-spawning call (``system``, ``popen``, ``exec*``, ``posix_spawn*``,
     ``subprocess.run/call/Popen/check_output``, ``shutil.which``...).
2. Dynamic (:class:`Tripwire`, during build and tests):
   * with namespaces (root or user namespaces): a tripwire shell script is
     bind-mounted over every path of the original (``program_path``, its real path,
     ``/usr/local/bin``, ``/usr/bin``, ``/bin``, ``/usr/sbin``, ``/sbin``). Any
     ``exec``, ``subprocess`` or ``system`` call by name or by path, and any copy made
     at build time (``cp $(which rev) executable``), runs the tripwire, which appends
     to a log that the grader reads: a violation. The shipped suite folder (hidden
     tests, reference solutions) is replaced by an empty tmpfs, /tmp etc. are fresh;
     the build runs as a dedicated uid that cannot read the workers' 0700 folders (so
     not the workspace copy of the original either). A built ELF ``./executable`` is
     compared with the original as in the static check.
   * without namespaces (fallback, ``isolation="path-shim"``): ``PATH`` holds only a
     shim folder of symlinks to allowed tools (shells, compilers, python3, common
     coreutils) plus the tripwire under the program's name. This catches calls by
     name; calls by absolute path are then caught only by the static path check.

What it does not catch: a re-implementation of the program's behaviour that embeds
expected outputs copied from the documentation (that is allowed: it is reverse
engineering); obfuscated paths built at run time in the path-shim fallback (the
namespace mode catches those); another installed program with the same behaviour
(e.g. ``busybox rev``, ``perl -e 'print scalar reverse'``): behaviourally equivalent
tools are not the original and are not flagged. In ``userns`` mode (unprivileged)
the build runs under the grader's own uid, so a submission that reaches the host mount
namespace through ``/proc/<grader pid>/root/...`` could still exec the original; the
root mode (separate uid) closes that path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.local import DEFAULT_PATH
from .model import Task

__all__ = ["Tripwire", "check_submission", "original_paths"]

BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
SHIM_TOOLS = (
    "sh", "bash", "dash", "cc", "gcc", "g++", "c++", "cpp", "as", "ld", "make", "python3",
    "perl", "cat", "cp", "mv", "rm", "mkdir", "chmod", "ls", "echo", "printf", "test", "[",
    "true", "false", "sed", "grep", "awk", "env", "head", "tail", "sort", "uniq", "touch",
    "dirname", "basename", "ln", "install", "strip",
)
_SPAWN = (
    r"(?:system|popen|_popen|exec[lv]p?e?|execvpe|posix_spawnp?|Popen|check_output|check_call|"
    r"getoutput|getstatusoutput|run|call|spawn\w*|which|create_subprocess_exec|"
    r"create_subprocess_shell|Command|exec)"
)


def original_paths(task: Task) -> list[str]:
    """Existing host paths of the original program (deduplicated by real path)."""
    cands = []
    if task.program_path:
        cands += [task.program_path, os.path.realpath(task.program_path)]
    cands += [f"{d}/{task.program}" for d in BIN_DIRS]
    seen, out = set(), []
    for c in cands:
        if os.path.isfile(c):
            rp = os.path.realpath(c)
            if rp not in seen:
                seen.add(rp)
                out.append(rp)
    return out


@functools.lru_cache(maxsize=32)
def _original_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _windows(orig: bytes, n: int = 8, size: int = 48) -> list[bytes]:
    """``n`` deterministic, non-trivial byte windows sampled across ``orig``."""
    out = []
    for k in range(n):
        off = len(orig) * (k + 1) // (n + 2)
        for shift in range(0, 4096, 64):  # skip padding / low-entropy regions
            w = orig[off + shift : off + shift + size]
            if len(w) == size and len(set(w)) > 16:
                out.append(w)
                break
    return out


def contains_original(data: bytes, task: Task) -> str | None:
    """Violation text if ``data`` is (or embeds) the original program, else None."""
    for p in original_paths(task):
        orig = _original_bytes(p)
        if data == orig:
            return f"byte-identical copy of the original {p}"
        wins = _windows(orig)
        if wins and sum(w in data for w in wins) >= min(3, len(wins)):
            return f"embeds the original {p} ({sum(w in data for w in wins)}/{len(wins)} sampled windows)"
    return None


def _is_shell(name: str, text: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    if base.endswith((".sh", ".bash", ".mk")) or base in ("Makefile", "makefile", "GNUmakefile"):
        return True
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and re.search(r"\b(?:ba|da|z|k)?sh\b", first) is not None


def _strip_shell_comment(line: str) -> str:
    s = line.lstrip()
    return "" if s.startswith("#") else re.sub(r"\s#.*$", "", line)


def check_submission(task: Task, files: dict[str, bytes]) -> str | None:
    """Static anti-cheat on submitted ``files`` (relative path -> bytes).

    Returns a violation text naming the file and the rule, or ``None`` if clean.
    See the module docstring for the rules.
    """
    prog = re.escape(task.program)
    path_res = [re.compile(rf"(?<![\w.-])(?:/usr)?(?:/local)?/s?bin/{prog}(?![\w.-])")]
    if task.program_path:
        path_res.append(re.compile(rf"(?<![\w.-]){re.escape(task.program_path)}(?![\w.-])"))
    shell_re = re.compile(
        rf"(?:^|[;&|(`{{]|\$\(|\b(?:exec|command|env|xargs|nohup|nice|which|type|hash|builtin|"
        rf"sudo|then|do|else|timeout\s+\S+)\s)\s*[\"']?{prog}[\"']?(?=$|[\s;&|)`<>])"
    )
    copy_re = re.compile(
        rf"\b(?:cp|mv|ln|cat|install|dd|rsync)\b[^;&|\n]*?\s(?:if=)?[\"']?(?:\./)?{prog}[\"']?(?=$|[\s;&|)<>])"
    )
    spawn_re = re.compile(rf"\b{_SPAWN}\s*\(\s*[\[({{]?\s*(?:&\w+\[\]\s*=\s*)?[rbuf]?[\"']{prog}(?=[\"'\s])")
    for name, data in sorted(files.items()):
        hit = contains_original(data, task)
        if hit:
            return f"{name}: {hit}"
        if data[:4] == b"\x7fELF":
            continue  # a build artifact (not copied to the build folder)
        text = data.decode("utf-8", errors="ignore")
        for r in path_res:
            m = r.search(text)
            if m:
                return f"{name}: refers to the original program's path {m.group(0)!r}"
        if _is_shell(name, text):
            # printf/echo payloads: treat escaped newlines as line breaks too
            for i, line in enumerate(text.replace("\\n", "\n").splitlines(), 1):
                code = _strip_shell_comment(line)
                if shell_re.search(code) or copy_re.search(code):
                    return f"{name}:{i}: calls the original program {task.program!r}: {line.strip()[:120]!r}"
        m = spawn_re.search(text)
        if m:
            line_no = text.count("\n", 0, m.start()) + 1
            return f"{name}:{line_no}: spawns the original program {task.program!r}: {m.group(0)[:120]!r}"
    return None


_TRIPWIRE = """#!/bin/sh
echo "$0 $*" >> {log} 2>/dev/null
echo "scarce-lab: the original program is not available during grading" >&2
exit 126
"""


@dataclass
class Tripwire:
    """Grading-time guard files for one task (see module docstring).

    folder: root-owned 0755 folder holding ``tripwire`` (0755), ``attempts.log``
    (0666: writable by the grading uid, not deletable) and ``shim/`` (fallback PATH).
    """

    folder: Path
    task: Task
    bash: str

    @classmethod
    def create(cls, folder: Path, task: Task, *, namespaces: bool) -> Tripwire:
        folder.mkdir(parents=True)
        folder.chmod(0o755)
        log = folder / "attempts.log"
        log.touch()
        log.chmod(0o666)
        script = folder / "tripwire"
        script.write_text(_TRIPWIRE.format(log=log))
        script.chmod(0o755)
        shim = folder / "shim"
        shim.mkdir()
        shim.chmod(0o755)
        bash = shutil.which("bash", path=DEFAULT_PATH) or "/bin/bash"
        if not namespaces:
            for tool in SHIM_TOOLS:
                if tool == task.program:
                    continue
                src = shutil.which(tool, path=DEFAULT_PATH)
                if src:
                    (shim / tool).symlink_to(src)
            (shim / task.program).symlink_to(script)
        return cls(folder=folder, task=task, bash=bash)

    @property
    def shim_dir(self) -> Path:
        return self.folder / "shim"

    def file_masks(self) -> tuple[tuple[str, str], ...]:
        """``(original path, tripwire)`` pairs to bind-mount."""
        return tuple((p, str(self.folder / "tripwire")) for p in original_paths(self.task))

    def hidden_paths(self) -> tuple[str, ...]:
        """Folders to hide during grading: the shipped suite (tests, references)."""
        from .suite import SUITE_DIR

        hp = [str(SUITE_DIR)] if SUITE_DIR.is_dir() else []
        if self.task.reference_dir is not None:
            hp.append(str(Path(self.task.reference_dir).resolve()))
        return tuple(dict.fromkeys(hp))

    def check_binary(self, data: bytes) -> str | None:
        """Violation text if a built ELF ``./executable`` is the original."""
        hit = contains_original(data, self.task)
        return f"built ./executable: {hit}" if hit else None

    def attempts(self) -> str:
        """First lines of the tripwire log ('' if the original was never reached)."""
        try:
            lines = (self.folder / "attempts.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "; ".join(lines[:3]) + (f" (+{len(lines) - 3} more)" if len(lines) > 3 else "")
