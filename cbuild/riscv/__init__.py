"""The riscv stage: sources in, the cost models' RISC-V build of them and its runs out.

Takes the sources and options of a build (from :mod:`cbuild.build`) and gives a static
RISC-V ELF (:mod:`.build`), its decoded instructions (:mod:`.isa`, :mod:`.decode`), and
runs of it in unicorn with the models' C hooks compiled in (:mod:`.executor`), or, once a run
has recorded the code it reached, of that code translated to native code (:mod:`.translate`,
:mod:`.translated`), including replays of library calls in unicorn (:mod:`.guest`).
:mod:`.machine` and :mod:`.maxplus` describe pipelines for the pipeline model; :mod:`.lowering`
is the IR-level estimate used with ``execute = false``.

Imports :mod:`cbuild.build`, :mod:`cbuild.errors` and :mod:`cbuild.framing` only.
"""
