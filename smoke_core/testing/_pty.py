"""A program on a real pseudo-terminal, for tests that drive ``smoke chat``,
approvals and pickers the way a person at a terminal does (POSIX only)."""

from __future__ import annotations

import codecs
import os
import select
import subprocess
import time
from pathlib import Path


class Pty:
    """Start ``argv`` on a new pseudo-terminal; :meth:`read_until` what it
    prints, :meth:`send` keys, :meth:`finish` for its exit status."""

    def __init__(self, argv: list[str], cwd: Path | str, env: dict[str, str]) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True)
        os.close(slave)
        self.buffer = ""
        # a character may arrive split over two reads
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_until(self, needle: str, timeout: float = 60) -> str:
        """What was printed up to and including ``needle`` (the rest stays
        buffered); an ``AssertionError`` with the last output when it does not
        come within ``timeout`` seconds or the program ends first."""
        deadline = time.monotonic() + timeout
        while needle not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {needle!r}; got:\n{self.buffer[-3000:]}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = self._decoder.decode(os.read(self.master, 65536))
                except OSError:
                    chunk = ""
                if not chunk:
                    if self.proc.poll() is not None:
                        raise AssertionError(f"process ended before {needle!r}; got:\n{self.buffer[-3000:]}")
                    continue
                self.buffer += chunk
        index = self.buffer.index(needle) + len(needle)
        out, self.buffer = self.buffer[:index], self.buffer[index:]
        return out

    def send(self, text: str) -> None:
        """Type ``text`` (``"\\r"`` is Enter)."""
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 60) -> int:
        """Wait for the program to end, keeping what it prints; its exit status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.buffer += self._decoder.decode(os.read(self.master, 65536))
                except OSError:
                    break
        code = self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        os.close(self.master)
        return code
