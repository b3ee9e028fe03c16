"""The report stage: costs in, documents and views out.

Snapshots and baselines (:mod:`.snapshot`), differences between runs (:mod:`.diff`),
history over commits (:mod:`.history`), flame graphs (:mod:`.flamegraph`), per-line
and per-function attribution (:mod:`.attribution`), text tables (:mod:`.texttable`,
:mod:`.sparkline`) and the HTML report (:mod:`.html`).

Imports :mod:`cbuild.build` and :mod:`cbuild.models`; never :mod:`cbuild.run`.
"""
