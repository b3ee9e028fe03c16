"""The build stage: C/C++ sources in, an instrumented program or shared library out.

Sources (paths, globs, compilation databases) are compiled to LLVM IR by clang
(:mod:`.compile`, cached in :mod:`.cache`), linked, given counters and cut-off checks
(:mod:`.instrument`, :mod:`.placement`, :mod:`.checks`), compiled by llvmlite in a
worker process (:mod:`.llvm_worker`, :mod:`.codegen`) and linked with the runtime.
By-products: the block table (:mod:`.blocks`) and exported C signatures
(:mod:`.signatures`). :class:`.builder.Builder` orchestrates it.

Imports only :mod:`cbuild.errors`, :mod:`cbuild.framing` and its own modules, with one stated
exception: the builder (:mod:`.builder`) hands each build to the cost models
(``cbuild.models``) and, for models that execute, to the RISC-V target build
(``cbuild.riscv``): it is where the stages meet.
"""
