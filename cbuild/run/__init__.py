"""The run stage: built artifacts in, counts and model results out.

Programs run as subprocesses (:mod:`.program`); libraries and CPython extension
modules run in host processes (:mod:`.library`, :mod:`.extension`, :mod:`.hosts`,
:mod:`.host_server`), so a crash or hang ends one test. Cut-offs report where code
stopped (:mod:`.stops`); :mod:`.ctypes_map` maps C types to ctypes.

Imports :mod:`cbuild.build`, :mod:`cbuild.riscv` (library calls replayed on the
RISC-V build) and :mod:`cbuild.models` (counts and costs).
"""
