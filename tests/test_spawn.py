"""Child processes start with ASLR off, without Python code between fork and exec."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cbuild.run.spawn import _ADDR_NO_RANDOMIZE, aslr_off, own_group

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="personality(2) is Linux's"),
    pytest.mark.skipif(
        sys.platform.startswith("linux") and bool(int(Path("/proc/self/personality").read_text(), 16) & 0x0040000),
        reason="this process runs with ASLR off already (setarch -R, a debugger): its children do too",
    ),
]


def _persona(**kwargs: object) -> int:
    """The persona of a child process started here, as it reads it itself."""
    out = subprocess.run(["cat", "/proc/self/personality"], capture_output=True, check=True, **kwargs)  # type: ignore[call-overload]
    return int(out.stdout, 16)


def test_children_started_inside_have_aslr_off_and_the_persona_is_restored() -> None:
    before = int(Path("/proc/self/personality").read_text(), 16)
    assert not _persona() & _ADDR_NO_RANDOMIZE
    with aslr_off():
        assert _persona(**own_group()) & _ADDR_NO_RANDOMIZE
    assert int(Path("/proc/self/personality").read_text(), 16) == before
    assert not _persona() & _ADDR_NO_RANDOMIZE


def test_another_threads_children_keep_aslr() -> None:
    inside, outside = threading.Event(), threading.Event()
    seen: list[int] = []

    def other() -> None:
        inside.wait()
        seen.append(_persona())
        outside.set()

    thread = threading.Thread(target=other)
    thread.start()
    with aslr_off():
        inside.set()
        outside.wait(timeout=30)
    thread.join()
    assert seen
    assert not seen[0] & _ADDR_NO_RANDOMIZE


def test_the_child_leads_a_process_group_of_its_own() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpgid(0) == os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        **own_group(),
    )
    assert out.stdout.strip() == "True"
