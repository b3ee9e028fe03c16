"""Exceptions raised by the engine; each message says what went wrong and where."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class CBuildError(Exception):
    """Base class of every error the engine raises on purpose."""


class ToolchainError(CBuildError):
    """The clang or llvmlite found cannot be used (missing, or mismatched versions)."""


class CompileError(CBuildError):
    """clang rejected a source file; the message is clang's own diagnostic."""

    def __init__(self, source: str, diagnostics: str) -> None:
        self.source = source
        self.diagnostics = diagnostics.rstrip()
        super().__init__(f"compiling {source} failed:\n{self.diagnostics}")


class LinkError(CBuildError):
    """The linker rejected the instrumented objects."""


class InstrumentError(CBuildError):
    """The IR could not be parsed, verified or instrumented."""


class ExecutionError(CBuildError):
    """A built program crashed, timed out or left no counts behind. ``echoed`` is the end of the
    message that quotes the last lines the process wrote to stderr, which also reached this
    process's stderr ("" where the message quotes none)."""

    echoed: str = ""


class ProgramCrashed(ExecutionError):
    """A program was killed by a signal; ``counts`` holds what it counted until then (a
    :class:`cbuild.models.costs.BlockCounts`, typed ``Any`` here: the engine's packages import
    this module, not the reverse), or None where it wrote nothing."""

    def __init__(self, message: str, *, counts: Any = None) -> None:
        super().__init__(message)
        self.counts = counts


class ProgramTimeout(ExecutionError):
    """A program ran past its timeout and was killed."""


class SignatureError(CBuildError, TypeError):
    """A library function was called with arguments its C signature cannot take."""


class UnknownFunction(CBuildError, AttributeError):
    """A library was asked for a function it does not export."""


class LibraryCrashed(ExecutionError):
    """A library call ended the library's process: a signal, a stack overflow, exit() or _exit()."""


class LibraryTimeout(ExecutionError):
    """A library call ran past its time limit; the library's process was killed."""


class InstrumentedIRRejected(InstrumentError):
    """LLVM refused the instrumented module; a build with edge counters retries with one counter per block."""


class LLVMCrashed(CBuildError):
    """LLVM ended the worker process running a build stage (an abort, a fatal error, a signal).

    The message names the stage, the build's sources, how the process ended and
    what it printed last (LLVM's own message, e.g. ``LLVM ERROR: ...``).
    """


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean x?)`` for a misspelt ``name`` among ``known``, or nothing."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def describe_os_error(exc: OSError) -> str:
    """``Permission denied``, ``Read-only file system``: the reason, without the path (the caller names
    it); where a path goes through a file, the file that is not a directory."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)) and exc.filename:
        return f"{_not_a_directory(Path(os.fsdecode(exc.filename)))} is not a directory"
    return exc.strerror or str(exc)


def _not_a_directory(path: Path) -> Path:
    """The first part of ``path`` that exists and is not a directory (``path`` itself if none is)."""
    for part in reversed(path.parents):
        if part.exists() and not part.is_dir():
            return part
    return path


class BuildDescriptionError(CBuildError):
    """A build's description is unusable: a compilation database, a source pattern, a target."""


class CompilerWarning(UserWarning):
    """clang warned about a source (``-Wall`` and the like): its diagnostics, once per build engine."""


class ReadOnlyArgumentWarning(UserWarning):
    """A library function wrote through a pointer given read-only memory (``bytes``): what it wrote is lost."""


class BuildDescriptionWarning(UserWarning):
    """Part of a build's description was left out: flags of a compilation database the pipeline does not use."""
