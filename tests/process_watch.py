"""Watch the processes a test started (a CLI run and its descendants) while they run.

Only those processes are looked at, never the rest of the machine: the roots are processes the test
started (or pids its fakes recorded), and the rest are their descendants, found through the kernel's
parent links (psutil), which hold even for children that start sessions of their own.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil


@dataclass
class Watched:
    """What was seen of a run's processes while it ran."""

    processes: dict[int, psutil.Process] = field(default_factory=dict)  #: pid -> process (start time kept)
    listening: dict[int, set[str]] = field(default_factory=dict)  #: pid -> IPs it listened on

    def servers(self) -> dict[int, set[str]]:
        """pid -> IPs of the processes that listened on anything."""
        return {pid: ips for pid, ips in self.listening.items() if ips}

    def describe(self, pid: int) -> str:
        """``pid (command line)`` of a watched process, for failure messages."""
        try:
            return f"{pid} ({' '.join(self.processes[pid].cmdline())[:300]})"
        except (psutil.NoSuchProcess, KeyError):
            return str(pid)

    def off_loopback(self) -> dict[str, set[str]]:
        """Watched processes that listened on an address other than 127.0.0.1 (described)."""
        return {self.describe(pid): ips for pid, ips in self.listening.items() if ips - {"127.0.0.1"}}

    def survivors(self) -> list[int]:
        """Pids of watched processes still running (``is_running`` compares start times, so a
        reused pid does not count)."""
        alive = []
        for p in self.processes.values():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p.pid)
            except psutil.NoSuchProcess:
                continue
        return alive


def watch(
    proc: subprocess.Popen[bytes], more_roots: Callable[[], list[int]] = list, poll_s: float = 0.05
) -> Watched:
    """Until ``proc`` exits, record it, its descendants and those of ``more_roots()`` (pids of
    processes the test's fakes started), with the IPs of their LISTEN sockets."""
    seen = Watched()
    while proc.poll() is None:
        roots = []
        for pid in [proc.pid, *more_roots()]:
            try:
                roots.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                continue
        for p in roots:
            try:
                family = [p, *p.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            for child in family:
                try:
                    ips = {
                        c.laddr.ip for c in child.net_connections("inet") if c.status == psutil.CONN_LISTEN
                    }
                except psutil.NoSuchProcess:
                    continue
                seen.processes.setdefault(child.pid, child)
                seen.listening.setdefault(child.pid, set()).update(ips)
        time.sleep(poll_s)
    return seen
