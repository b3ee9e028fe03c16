"""The cost-model registry: built-in models, a third-party model found through its entry point,
configuration of models and the errors users see."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest

from cbuild import Builder, BuildOptions, CBuildError, run_program
from cbuild.models import CostModel, Metric, ModelError, ModelRegistry, Param, default_registry, integer
from cbuild.models.base import Runtime, checked_costs
from cbuild.models.costs import Cost
from cbuild.riscv.machine import MACHINES_DIR

LOADS_PLUGIN = '''
"""A company's own cost model: executed IR loads. Nothing of pytest-instrbudget is touched."""
import re

from cbuild.hookspecs import hookimpl
from cbuild.models import CostModel, Metric, Param, integer

_LOAD = re.compile(r"^  %[-\\w.$\\"]+ = load ")


class LoadCount(CostModel):
    name = "loads"
    metrics = (Metric("loads", "loads", "max_loads"),)
    params = {"weight": Param(1, "cost of one load", integer(1))}

    def analyse(self, build):
        # Count load instructions per block from the IR of the build.
        from cbuild.build.blocks import parse_module

        parsed = parse_module(build.ir)
        out = []
        for block in parsed.blocks:
            lines = parsed.lines[block.first_line : block.term_end]
            out.append(sum(1 for line in lines if _LOAD.match(line)))
        return {"loads": out}

    def block_costs(self, table, analysis):
        return [n * self.config["weight"] for n in analysis["loads"]]


@hookimpl
def instrbudget_cost_models():
    return [LoadCount]
'''

SUM_C = """
int sum(const int *a, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
"""


def install_model(root: Path, module: str, source: str) -> None:
    """Install a model the way pip would: a module plus a dist-info with an entry point."""
    (root / f"{module}.py").write_text(source)
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    project = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[instrbudget]\n{module.split('_')[0]} = {module}\n")


def install_loads_plugin(root: Path) -> None:
    install_model(root, "loads_model", LOADS_PLUGIN)


def test_builtin_models_come_through_the_hook() -> None:
    registry = default_registry()
    assert {"ir-count", "pipeline", "zkvm"} <= set(registry.names)
    assert {registry.origin(name) for name in ("ir-count", "pipeline", "zkvm")} == {"builtin"}
    keywords = registry.keywords()
    assert keywords["max_instr"] == "ir-count"
    assert keywords["max_cycles"] == "pipeline"
    assert keywords["max_zkcycles"] == "zkvm"


def test_registry_rejects_clashes_and_non_models() -> None:
    class Clash(CostModel):
        name = "ir-count"
        metrics = (Metric("x", "x", "max_x"),)

    registry = ModelRegistry(entry_points=False)
    with pytest.raises(ModelError, match="'ir-count' is provided by both 'builtin' and 'direct'"):
        registry.register(Clash)
    with pytest.raises(ModelError, match="not a CostModel subclass"):
        registry.register(int)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="unknown cost model 'nope'; known models: heap, ir-count, pipeline, zkvm"):
        registry.create("nope")
    with pytest.raises(ModelError, match=r"unknown cost model 'zkmv' \(did you mean zkvm\?\); known models: heap"):
        registry.create("zkmv")


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (
            Metric("foo_m", "u", "tolerance"),
            r"metric 'foo_m': marker keyword 'tolerance' is one of the budget marker's own",
        ),
        (
            Metric("foo_m", "u", "stop_at_weighted"),
            r"metric 'foo_m': marker keyword 'stop_at_weighted' is one of the budget marker's",
        ),
        (Metric("foo_m", "u", "max foo"), r"metric 'foo_m': marker keyword 'max foo' must be a Python identifier"),
        (Metric("", "u", "max_foo"), r"metric name '' must be a non-empty name without spaces"),
        (Metric("foo m", "u", "max_foo"), r"metric name 'foo m' must be a non-empty name without spaces"),
        (Metric("status", "u", "max_status"), r"metric name 'status' is a column of the reports"),
    ],
)
def test_registry_rejects_metrics_the_marker_or_the_reports_would_misread(metric: Metric, message: str) -> None:
    # budget(tolerance=5) on a model whose keyword was 'tolerance' set the tolerance, and the
    # model's limit was never checked.
    class Odd(CostModel):
        name = "odd"
        metrics = (metric,)

    with pytest.raises(ModelError, match=r"cost model 'odd' of plugin 'direct': " + message):
        ModelRegistry(entry_points=False).register(Odd)


def test_registry_rejects_names_and_keywords_the_fingerprint_or_the_marker_would_mix_up() -> None:
    """A model named "my model" was filed under "my" in the baseline's fingerprint, so a change of its
    parameters read as a cost change; a limit keyword "zkcycles" made the cut-off keyword
    stop_at_zkcycles of zkvm's max_zkcycles, the last registered winning."""

    class Spaced(CostModel):
        name = "my model"
        metrics = (Metric("spaced_cost", "u", "max_spaced"),)

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [1] * len(table)

    class Shadow(CostModel):
        name = "zz"
        metrics = (Metric("zz_cost", "u", "zkcycles"),)

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [1] * len(table)

    registry = ModelRegistry(entry_points=False)
    with pytest.raises(ModelError, match=r"cost model 'my model' of plugin 'direct': a model's name is letters"):
        registry.register(Spaced)
    with pytest.raises(ModelError, match=r"cost model 'zz' of plugin 'direct' reuses 'zkcycles' of model 'zkvm'"):
        registry.register(Shadow)


def test_a_models_parameters_are_checked_and_said_as_its_table_whatever_the_model_does() -> None:
    """A check that raised TypeError, or a configure() that raised ValueError, was a pytest
    INTERNALERROR; a default the check refuses measured with it; a ModelError from configure()
    did not name the table."""

    def picky(value: object) -> int:
        return 5 // len(value)  # type: ignore[arg-type]  # TypeError on an int

    class Checked(CostModel):
        name = "checked"
        metrics = (Metric("checked_cost", "u", "max_checked"),)
        params: ClassVar[dict[str, Param]] = {
            "weight": Param(0, "each instruction's weight", integer(1)),
            "picky": Param([1], "a list", picky),
        }

        def configure(self) -> None:
            if self.config["picky"] == 5:
                raise ValueError("five is too many")
            if self.config["picky"] == 1:
                raise ModelError("picky must be more than 1")

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [1] * len(table)

    with pytest.raises(
        ModelError, match=r"^\[tool.instrbudget.checked\] weight \(the model's default\): expected an integer"
    ):
        Checked({})
    with pytest.raises(
        ModelError, match=r"^\[tool.instrbudget.checked\] picky: the model's check of 3 raised TypeError"
    ):
        Checked({"weight": 1, "picky": 3})
    with pytest.raises(
        ModelError, match=r"^\[tool.instrbudget.checked\]: the model's configure\(\) raised ValueError: five is"
    ):
        Checked({"weight": 1, "picky": [1]})
    with pytest.raises(ModelError, match=r"^\[tool.instrbudget.checked\] picky must be more than 1$"):
        Checked({"weight": 1, "picky": [1, 2, 3, 4, 5]})


def test_a_parameter_value_with_the_fingerprints_separators_reads_back_whole() -> None:
    """A string parameter holding "; " split the fingerprint's models there, so the baseline was
    never comparable again, right after an update."""
    from cbuild.report.update import changed_parameters, recorded_models

    described = "ir-count version=1; labelled version=1 label='a; b x=1' weight=1"
    assert recorded_models({"models": described}) == {
        "ir-count": "ir-count version=1",
        "labelled": "labelled version=1 label='a; b x=1' weight=1",
    }
    old, new = "labelled version=1 label='a; b x=1' weight=1", "labelled version=1 label='a; b x=2' weight=1"
    assert changed_parameters(old, new) == "label: 'a; b x=1' in the baseline, 'a; b x=2' now"


def test_registry_rejects_an_additive_model_that_cannot_give_its_metrics() -> None:
    # Two metrics and block_costs only: every test failed with "evaluate returned costs of two_a".
    class Two(CostModel):
        name = "two"
        metrics = (Metric("two_a", "a", "max_two_a"), Metric("two_b", "b", "max_two_b"))

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [1] * len(table)

    class Neither(CostModel):
        name = "neither"
        metrics = (Metric("neither_a", "a", "max_neither_a"),)

    registry = ModelRegistry(entry_points=False)
    with pytest.raises(ModelError, match=r"'two' of plugin 'direct' declares 2 metrics and block_costs only"):
        registry.register(Two)
    with pytest.raises(ModelError, match=r"'neither' of plugin 'direct' implements neither block_costs nor evaluate"):
        registry.register(Neither)
    assert checked_block_costs_message("123") == (
        "cost model 'm': block_costs returned '123'; expected a sequence of non-negative integers, one per block"
    )


def checked_block_costs_message(costs: object) -> str:
    from cbuild.build.blocks import BlockTable
    from cbuild.models.base import checked_block_costs

    with pytest.raises(ModelError) as raised:
        checked_block_costs("m", BlockTable([]), costs)
    return str(raised.value)


def test_a_table_parameter_written_in_another_order_is_the_same_configuration() -> None:
    # Reordering `extra = { fadd = 2, fsub = 3 }` made the baseline "not comparable".
    from cbuild.models.base import Param

    class Weighted(CostModel):
        name = "weighted"
        metrics = (Metric("weighted_cost", "u", "max_weighted"),)
        params = {"extra": Param({}, "cost per opcode", None)}  # noqa: RUF012

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [0] * len(table)

    registry = ModelRegistry(entry_points=False)
    registry.register(Weighted)
    one = registry.create("weighted", {"extra": {"fadd": 2, "fsub": {"x": [1, {"b": 1, "a": 2}]}}})
    two = registry.create("weighted", {"extra": {"fsub": {"x": [1, {"a": 2, "b": 1}]}, "fadd": 2}})
    assert one.key_params() == two.key_params()
    assert registry.create("weighted", {"extra": {"fadd": 3}}).key_params() != one.key_params()


def test_the_markers_own_keywords_are_the_ones_metrics_may_not_take() -> None:
    from cbuild.models.base import MARKER_KEYWORDS
    from pytest_instrbudget.marker import MODELS, STOP_AT, UNAVAILABLE

    assert {MODELS, STOP_AT, UNAVAILABLE, "regions", "timeout", "tolerance"} == MARKER_KEYWORDS


def test_plugins_that_cannot_load_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin whose import fails named no plugin or package; of two packages with one entry point
    name one was left out without a word; a misspelt hook was ignored."""
    broken = tmp_path / "broken"
    broken.mkdir()
    install_model(broken, "acme_models", "import numpy_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(broken))
    with pytest.raises(
        ModelError,
        match=r"cost-model plugin 'acme' \(acme_models, of acme-models 1.0\) failed to load: "
        r"ModuleNotFoundError.*numpy_that_is_not_installed.*fix or uninstall that package",
    ):
        ModelRegistry()
    (broken / "acme_models.py").write_text(LOADS_PLUGIN)
    monkeypatch.delitem(sys.modules, "acme_models", raising=False)
    other = tmp_path / "other"
    other.mkdir()
    install_model(other, "acme_tools", LOADS_PLUGIN)
    monkeypatch.syspath_prepend(str(other))
    with pytest.raises(ModelError, match=r"cost-model plugins of acme-\w+ 1.0 and acme-\w+ 1.0 are both named 'acme'"):
        ModelRegistry()
    shutil.rmtree(other / "acme_tools-1.0.dist-info")
    (broken / "acme_models.py").write_text(
        LOADS_PLUGIN.replace("def instrbudget_cost_models", "def instrbudget_cost_model")
    )
    monkeypatch.delitem(sys.modules, "acme_models", raising=False)
    with pytest.raises(ModelError, match=r"cost-model plugin 'acme': unknown hook 'instrbudget_cost_model'"):
        ModelRegistry()


def _one_model(cls: type[CostModel], tmp_path: Path) -> tuple[CostModel, Path]:
    """A model of class ``cls`` (registered beside the built-in ones) and a source to build with it."""
    registry = ModelRegistry(entry_points=False)
    registry.register(cls)
    source = tmp_path / "work.c"
    source.write_text(SUM_C)
    return registry.create(cls.name), source


def test_a_compile_error_in_a_models_run_time_code_names_the_model(builder: Builder, tmp_path: Path) -> None:
    # The error named a deleted temporary file (models.c) and a line of the joined source.
    class Broken(CostModel):
        name = "broken"
        metrics = (Metric("broken_n", "n", "max_broken_n"),)
        events = frozenset({"blocks"})

        def runtime(self, analysis):  # type: ignore[no-untyped-def]
            return Runtime(
                "static uint64_t n;\n"
                "static inline void model_block(uint32_t block) { n += block }\n"  # the missing ';'
                "static void model_reset(uint32_t in_process) { n = 0; }\n"
                "static void model_finish(uint64_t *out) { out[0] = n; }\n",
                results=1,
            )

        def evaluate(self, counts):  # type: ignore[no-untyped-def]
            return [Cost("broken_n", counts.results_of("broken")[0])]

    model, source = _one_model(Broken, tmp_path)
    with pytest.raises(CBuildError, match=r"cost model broken:2:\d+: error: expected ';'"):
        builder.build([source], kind="library", models=[model])


def test_an_analysis_json_cannot_hold_names_the_model(builder: Builder, tmp_path: Path) -> None:
    # A set came out as a json TypeError traceback from inside the builder, without the model's name.
    class Sets(CostModel):
        name = "sets"
        metrics = (Metric("sets_n", "n", "max_sets_n"),)

        def analyse(self, build):  # type: ignore[no-untyped-def]
            return {"seen": {1, 2}}

        def block_costs(self, table, analysis):  # type: ignore[no-untyped-def]
            return [0] * len(table)

    model, source = _one_model(Sets, tmp_path)
    with pytest.raises(
        ModelError, match=r"cost model 'sets': analyse returned what JSON cannot hold \(Object of type set is not"
    ):
        builder.build([source], kind="library", models=[model])


def test_a_models_run_time_code_from_an_analysis_json_changes_is_not_made_again(tmp_path: Path) -> None:
    """An analysis whose tuples come back as lists (its C code made from them): the check of a
    cached build's run-time code compares what a read-back analysis gives on both sides, so the
    build is kept; an analysis with int keys (read back as strings) is left unchecked, not an error."""
    said: list[str] = []

    class Tuples(CostModel):
        name = "tuples"
        metrics = (Metric("tuples_n", "n", "max_tuples_n"),)
        events = frozenset({"blocks"})

        def analyse(self, build):  # type: ignore[no-untyped-def]
            return {"weight": (3, 4), "by_block": {0: 1}}

        def runtime(self, analysis):  # type: ignore[no-untyped-def]
            step = sum(analysis["weight"]) + analysis["by_block"][0]  # KeyError: '0' read back
            return Runtime(TICKS_C.replace("ticks_n += 1", f"ticks_n += {step}"), results=1)

        def evaluate(self, counts):  # type: ignore[no-untyped-def]
            return [Cost("tuples_n", counts.results_of("tuples")[0])]

    model, source = _one_model(Tuples, tmp_path)
    builder = Builder(cache_dir=tmp_path / "cache", progress=said.append)
    for _ in range(2):
        builder.build([source], kind="library", models=[model])
    assert not [line for line in said if "rebuilding" in line], said


def test_a_limit_on_a_clock_no_block_looks_at_is_refused_outside_tests(builder: Builder, tmp_path: Path) -> None:
    # run_program(limits={"allocations": 5}) ran a loop of 1000 mallocs to its end.
    source = tmp_path / "allocs.c"
    source.write_text("#include <stdlib.h>\nint main(void) { for (int i = 0; i < 1000; i++) free(malloc(8)); }\n")
    registry = default_registry()
    models = [registry.create("ir-count"), registry.create("heap")]
    program = builder.build([source], options=BuildOptions(cutoff=True), models=models)
    with pytest.raises(CBuildError, match=r"no limit can be set on 'allocations': the heap model's clock is read at"):
        run_program(program, limits={"allocations": 5})


def test_model_parameters_are_validated_by_key() -> None:
    registry = default_registry()
    with pytest.raises(
        ModelError, match=r"\[tool.instrbudget.zkvm\] has an unknown key 'po3' \(did you mean po2\?\); accepted: .*po2"
    ):
        registry.create("zkvm", {"po3": 20})
    with pytest.raises(ModelError, match=r"\[tool.instrbudget.zkvm\] po2: expected an integer from 15 to 24"):
        registry.create("zkvm", {"po2": 40})
    with pytest.raises(ModelError, match=r"machine: unknown machine 'z80': expected one of inorder5, rocket"):
        registry.create("pipeline", {"machine": "z80"})
    with pytest.raises(
        ModelError, match=r"machine: machine description './chip.toml' not found: no file /.*/chip.toml"
    ):
        registry.create("pipeline", {"machine": "./chip.toml"}, root=Path("/nonexistent/project"))


def test_model_parameters_change_the_build_key(tmp_path: Path) -> None:
    a = default_registry().create("pipeline", {"machine": "inorder5"}).key_params()
    b = default_registry().create("pipeline", {"machine": "rocket"}).key_params()
    assert a != b
    # A user's machine file is part of the key by content: editing it gives a new key.
    chip = tmp_path / "chip.toml"
    shipped = (MACHINES_DIR / "inorder5.toml").read_text()
    chip.write_text(shipped)
    first = default_registry().create("pipeline", {"machine": "chip.toml"}, root=tmp_path).key_params()
    chip.write_text(shipped.replace("latency = 32", "latency = 30"))
    second = default_registry().create("pipeline", {"machine": "chip.toml"}, root=tmp_path).key_params()
    assert first != second


def test_third_party_model_is_found_through_its_entry_point_and_used(
    tmp_path: Path,
    builder: Builder,
    write,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_loads_plugin(site)
    monkeypatch.syspath_prepend(str(site))
    registry = default_registry()
    assert registry.origin("loads") == "loads"
    model = registry.create("loads", {"weight": 2})
    src = write(
        "main.c",
        "__attribute__((noinline))" + SUM_C + "int g[100];\nint main(int argc, char **argv) {\n"
        "    for (int i = 0; i < 100; i++) g[i] = argc + i;\n    return sum(g, 100) & 0x7f;\n}\n",
    )
    flags = ("-fno-vectorize", "-fno-slp-vectorize", "-fno-unroll-loops")
    artifact = builder.build([src], options=BuildOptions(opt_level="1", cflags=flags), models=[model])
    run = run_program(artifact)
    assert run.counts is not None
    (cost,) = model.evaluate(run.counts)
    assert cost.metric == "loads"
    # sum() loads g[i] 100 times (scalar loop); each load weighs 2.
    assert cost.total == 200
    assert cost.functions == {"sum": 200}


def test_a_changed_model_module_is_never_served_its_old_analysis(
    tmp_path: Path,
    builder: Builder,
    write,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """A build caches the models' static documents: a model whose analyse changed (with the same
    version) gets a build of its own, not the document its earlier code wrote."""
    site = tmp_path / "site"
    site.mkdir()
    install_loads_plugin(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "loads_model", raising=False)
    src = write("main.c", "__attribute__((noinline))" + SUM_C + "int g[10];\nint main(void) { return sum(g, 10); }\n")
    options = BuildOptions(opt_level="1", cflags=("-fno-vectorize", "-fno-slp-vectorize", "-fno-unroll-loops"))

    def loads() -> int:
        model = default_registry().create("loads")
        run = run_program(builder.build([src], options=options, models=[model]))
        assert run.counts is not None
        return model.evaluate(run.counts)[0].total

    assert loads() == 10
    module = site / "loads_model.py"
    module.write_text(module.read_text().replace("out.append(sum(", "out.append(2 * sum("))
    monkeypatch.delitem(sys.modules, "loads_model")
    assert loads() == 20


def test_plugin_budgets_on_a_third_party_model(pytester: pytest.Pytester) -> None:
    install_loads_plugin(pytester.path)
    pytester.syspathinsert(pytester.path)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyprojecttoml(
        '[tool.instrbudget]\nopt_level = "1"\nmodels = ["ir-count", "loads"]\n[tool.instrbudget.loads]\nweight = 1\n'
    )
    pytester.makepyfile(
        test_loads=textwrap.dedent(
            """
            import array

            import pytest

            FLAGS = ["-fno-vectorize", "-fno-slp-vectorize", "-fno-unroll-loops"]

            @pytest.mark.budget(max_loads=50)
            def test_sum(cbuild):
                lib = cbuild.library("work.c", cflags=FLAGS)
                assert lib.sum(array.array("i", [1] * 50), 50) == 50

            @pytest.mark.budget(max_loads=10)
            def test_sum_too_many(cbuild):
                lib = cbuild.library("work.c", cflags=FLAGS)
                lib.sum(array.array("i", [1] * 50), 50)
            """
        )
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*loads: 50 exceeds max_loads=10 by 40*"])
    doc = json.loads(out.read_text())
    assert doc["tests"]["test_loads.py::test_sum"]["metrics"]["loads"]["value"] == 50


FLAGGED_PLUGIN = """
from cbuild.hookspecs import hookimpl
from cbuild.models import CostModel, Metric


class Flagged(CostModel):
    name = "flagged"
    metrics = (Metric("flagged_blocks", "blocks", "max_flagged_blocks"),)
    compile_flags = {flags!r}

    def block_costs(self, table, analysis):
        return [1] * len(table)


@hookimpl
def instrbudget_cost_models():
    return [Flagged]
"""


def test_plugin_a_models_build_flags_make_the_baseline_not_comparable(pytester: pytest.Pytester) -> None:
    # Flags a model adds to the native build change every metric, ir_instructions included: the
    # baseline's ir_instructions were compared as if nothing had changed (+430% failed the tests;
    # flags that made the code cheaper would have hidden regressions).
    install_model(pytester.path, "flagged_model", FLAGGED_PLUGIN.format(flags=("-fno-unroll-loops",)))
    pytester.syspathinsert(pytester.path)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(
        test_f=textwrap.dedent(
            """
            import array

            def test_sum(cbuild):
                lib = cbuild.library("work.c")
                assert lib.sum(array.array("i", [1] * 64), 64) == 64
            """
        )
    )
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-model=ir-count", "--instrbudget-model=flagged")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*was made with another toolchain or other build settings (differs in: model_flags)*"])


def test_plugin_a_model_cannot_set_the_optimisation_level(pytester: pytest.Pytester) -> None:
    install_model(pytester.path, "flagged_model", FLAGGED_PLUGIN.format(flags=("-O0",)))
    pytester.syspathinsert(pytester.path)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(test_f="def test_sum(cbuild):\n    cbuild.library('work.c')\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-model=ir-count", "--instrbudget-model=flagged")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cost model 'flagged': compile_flags has '-O0'; the optimisation level is the build's*"]
    )


def test_plugin_keyword_of_inactive_model_names_model_and_switch(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(test_k="import pytest\n\n@pytest.mark.budget(max_zkcycles=10)\ndef test_a(cbuild):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*budget(max_zkcycles=...) belongs to the cost model 'zkvm', which is not active; add it to `models`*"
            "--instrbudget-model=zkvm*"
        ]
    )


def test_plugin_region_keyword_of_inactive_model_names_model_and_switch(pytester: pytest.Pytester) -> None:
    """A region's limit on another model's metric says which model, as a test's limit does."""
    pytester.makepyfile(
        test_k="import pytest\n\n@pytest.mark.budget(regions={'fill': {'max_allocations': 10}})\n"
        "def test_a(cbuild):\n    pass\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*budget(regions={'fill': {'max_allocations': ...}}) belongs to the cost model 'heap', which is not "
            "active; add it to `models`*--instrbudget-model=heap*"
        ]
    )


@pytest.mark.parametrize("models", ['["pipeline"]', '["ir-count"]'])
def test_plugin_bad_model_table_names_the_key(pytester: pytest.Pytester, models: str) -> None:
    """Also where the model is not among the session's (no test may choose it): a typo there is
    not left for the day a test chooses it."""
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nmodels = {models}\n[tool.instrbudget.pipeline]\nmachin = "x"\n')
    pytester.makepyfile(test_k="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*{pytester.path / 'pyproject.toml'}: [[]tool.instrbudget.pipeline[]] has an unknown key 'machin'"
            " (did you mean machine?); accepted: execute, machine*"
        ]
    )


def test_plugin_model_parameters_are_part_of_the_baseline_fingerprint(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(
        test_p=textwrap.dedent(
            """
            import array

            def test_sum(cbuild):
                lib = cbuild.library("work.c")
                assert lib.sum(array.array("i", range(40)), 40) == 780
            """
        )
    )
    toml = '[tool.instrbudget]\nmodels = ["ir-count", "pipeline"]\n[tool.instrbudget.pipeline]\nmachine = "{}"\n'
    pytester.makepyprojecttoml(toml.format("inorder5"))
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    assert "machine='inorder5'" in baseline["fingerprint"]["models"]
    assert baseline["tests"]["test_p.py::test_sum"]["pipeline_cycles"]["total"] > 0
    pytester.makepyprojecttoml(toml.format("rocket"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-json=run.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*holds pipeline costs made with other pipeline parameters (machine: 'inorder5' in the baseline, "
            "'rocket' now; *they are not comparable (rewrite them with --instrbudget-update)"
        ]
    )
    # The other model's costs still compare: ir-count's parameters did not change.
    metrics = json.loads((pytester.path / "run.json").read_text())["tests"]["test_p.py::test_sum"]["metrics"]
    assert {name: m["status"] for name, m in metrics.items()} == {
        "ir_instructions": "ok",
        "pipeline_cycles": "not comparable",
    }


def test_plugin_an_update_with_fewer_models_says_it_rewrote_the_baseline_and_what_it_dropped(
    pytester: pytest.Pytester,
) -> None:
    """An update whose session measures fewer models than the baseline was made with rewrites it as
    a whole: it said "1 added" of a test the baseline had, and nothing of the pipeline costs gone."""
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(
        test_p="import array\n\ndef test_sum(cbuild):\n"
        "    assert cbuild.library('work.c').sum(array.array('i', range(40)), 40) == 780\n"
    )
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "pipeline"]\n')
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update", "--instrbudget-model=ir-count")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*baseline * written: 0 added, 1 changed, 0 pruned",
            "instrbudget:   rewritten as a whole for another toolchain or other models (models: ir-count version=1; "
            "pipeline version=1 * in the baseline, ir-count version=1 now); the costs of pipeline, which this run did "
            "not measure, are no longer in it",
        ]
    )
    baseline = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    assert list(baseline["tests"]["test_p.py::test_sum"]) == ["ir_instructions"]


FAULTY_PLUGIN = '''
"""A model with a bug of the kind chosen by FAULTY_MODE, in each of its phases."""
import json
import os

from cbuild.hookspecs import hookimpl
from cbuild.models import CostModel, Metric


class Faulty(CostModel):
    name = "faulty"
    metrics = (Metric("faulty_units", "units", "max_faulty"),)

    def analyse(self, build):
        if os.environ.get("FAULTY_MODE") == "analyse-raises":
            raise KeyError("no such table")
        return {}

    def block_costs(self, table, analysis):
        mode = os.environ.get("FAULTY_MODE")
        if mode == "raises":
            return [1 // 0 for _ in table.blocks]
        if mode == "json":
            return json.loads("{")
        if mode == "none":
            return None
        if mode == "short":
            return [1] * (len(table) - 1)
        return [{"negative": -1, "float": 0.5, "none-per-block": None}.get(mode, 1) for _ in table.blocks]


@hookimpl
def instrbudget_cost_models():
    return [Faulty]
'''


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        (
            "raises",
            "cost model 'faulty' failed in block_costs: ZeroDivisionError: integer division or modulo by zero "
            "(at */faulty_model.py:2?)",
        ),
        # Raised in the json module: the line is the model's call of it.
        ("json", "cost model 'faulty' failed in block_costs: JSONDecodeError: * (at */faulty_model.py:2?)"),
        (
            "none",
            "cost model 'faulty': block_costs returned None; expected a sequence of non-negative integers, "
            "one per block",
        ),
        ("short", "cost model 'faulty': block_costs returned * costs for * blocks"),
        (
            "negative",
            "cost model 'faulty': block_costs returned -1 for block 0 (in sum); expected a non-negative "
            "integer per block",
        ),
        ("float", "cost model 'faulty': block_costs returned 0.5 for block 0 (in sum)*"),
        ("none-per-block", "cost model 'faulty': block_costs returned None for block 0 (in sum)*"),
    ],
)
def test_plugin_a_model_that_fails_fails_the_test_by_name_and_keeps_the_other_metrics(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str, said: str
) -> None:
    """A model's bug is the model's: the test fails with the model's name and what it did, without
    a traceback through the engine; the test's other metrics are measured and reported, and no
    wrong number (nothing, a negative or a fraction) is summed or written to the baseline."""
    install_model(pytester.path, "faulty_model", FAULTY_PLUGIN)
    pytester.syspathinsert(pytester.path)
    monkeypatch.setenv("FAULTY_MODE", mode)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "faulty"]\n')
    pytester.makepyfile(
        test_f="import array\n\ndef test_sum(cbuild):\n"
        '    assert cbuild.library("work.c").sum(array.array("i", [1] * 8), 8) == 8\n'
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}", "--instrbudget-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*_ test_sum _*", "instrbudget: cost model 'faulty' failed", f"  {said}"])
    result.stdout.no_fnmatch_line("*Traceback*")
    test = json.loads(out.read_text())["tests"]["test_f.py::test_sum"]
    assert test["metrics"]["ir_instructions"]["value"] > 0
    assert "faulty_units" not in test["metrics"]
    assert test["unavailable"]["faulty_units"]["reason"].startswith("cost model 'faulty'")
    baseline = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    assert "faulty_units" not in baseline["tests"]["test_f.py::test_sum"]


def test_plugin_a_model_whose_analysis_raises_names_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_model(pytester.path, "faulty_model", FAULTY_PLUGIN)
    pytester.syspathinsert(pytester.path)
    monkeypatch.setenv("FAULTY_MODE", "analyse-raises")
    pytester.makefile(".c", work=SUM_C + "/* a build of its own: the analysis runs */\n")
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "faulty"]\n')
    pytester.makepyfile(test_f='def test_sum(cbuild):\n    cbuild.library("work.c")\n')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cost model 'faulty' failed in analyse: KeyError: 'no such table' (at */faulty_model.py:1?)*"]
    )
    result.stdout.no_fnmatch_line("*builder.py*")


TICKS_PLUGIN = '''
"""A model with a dynamic phase that keeps no clock: blocks entered, counted at run time."""
from cbuild.hookspecs import hookimpl
from cbuild.models import CostModel, Metric
from cbuild.models.base import Runtime
from cbuild.models.costs import Cost

SOURCE = """
static uint64_t ticks_n;
static inline void model_block(uint32_t block) { (void)block; ticks_n++; }
static void model_reset(uint32_t in_process) { (void)in_process; ticks_n = 0; }
static void model_finish(uint64_t *out) { out[0] = ticks_n; }
"""


class Ticks(CostModel):
    name = "ticks"
    metrics = (Metric("ticks", "blocks", "max_ticks"),)
    events = frozenset({"blocks"})

    def runtime(self, analysis):
        return Runtime(SOURCE, results=1)

    def evaluate(self, counts):
        return [Cost("ticks", counts.results_of("ticks")[0])]


@hookimpl
def instrbudget_cost_models():
    return [Ticks]
'''


def test_plugin_a_cut_off_no_build_can_check_fails_the_test(pytester: pytest.Pytester) -> None:
    """A cut-off on the metric of an additive model is refused before any test runs; one on a
    model whose dynamic phase keeps no clock fails the test that set it, where it passed unchecked."""
    install_loads_plugin(pytester.path)
    install_model(pytester.path, "ticks_model", TICKS_PLUGIN)
    pytester.syspathinsert(pytester.path)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "loads", "ticks"]\n')
    body = 'def test_sum(cbuild):\n    cbuild.library("work.c").sum(array.array("i", [1] * 8), 8)\n'
    pytester.makepyfile(test_l=f"import array\nimport pytest\n\n@pytest.mark.budget(stop_at_loads=5)\n{body}")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_l.py::test_sum: budget(stop_at_loads=...): the loads model keeps no clock while code runs*"]
    )
    pytester.makepyfile(
        test_l=f"import array\nimport pytest\n\n@pytest.mark.budget(regions={{'r': {{'max_loads': 5}}}})\n{body}"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*budget(regions={'r': {'max_loads': ...}}): the loads model keeps no clock*"])
    # The config's cutoff stops code at a count of the headline metric: not of an additive model's.
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["loads", "ir-count"]\ncutoff = 2\n')
    pytester.makepyfile(test_l=f"import array\nimport pytest\n\n@pytest.mark.budget(max_instr=1000)\n{body}")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_l.py::test_sum: cutoff = 2 in [[]tool.instrbudget[]] stops code at a count of the test's headline "
            "metric, loads, but the loads model keeps no clock that is looked at before each block*"
        ]
    )
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "loads", "ticks"]\n')
    (pytester.path / "test_l.py").unlink()
    pytester.makepyfile(test_t=f"import array\nimport pytest\n\n@pytest.mark.budget(stop_at_ticks=5)\n{body}")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the cut-off on ticks was not checked: no build of the test keeps a clock of it*",
            "instrbudget: ticks 6 > stop_at_ticks=5",
            "  ticks: 6 exceeds stop_at_ticks=5 by 1*",  # the keyword the test gave, not max_ticks
        ]
    )


FILE_TICKS_PLUGIN = TICKS_PLUGIN.replace("Runtime(SOURCE,", 'Runtime(Path(__file__).with_name("ticks.c").read_text(),')
FILE_TICKS_PLUGIN = FILE_TICKS_PLUGIN.replace(
    "from cbuild.hookspecs", "from pathlib import Path\nfrom cbuild.hookspecs"
)
TICKS_C = """
static uint64_t ticks_n;
static inline void model_block(uint32_t block) { (void)block; ticks_n += 1; }
static void model_reset(uint32_t in_process) { (void)in_process; ticks_n = 0; }
static void model_finish(uint64_t *out) { out[0] = ticks_n; }
"""


def test_plugin_a_models_run_time_code_is_part_of_the_build(pytester: pytest.Pytester) -> None:
    # The C code of a model's dynamic phase, read from a file beside the model, was not in the
    # build's key: after it changed, the cached build kept measuring with the old code.
    install_model(pytester.path, "ticks_model", FILE_TICKS_PLUGIN)
    code = pytester.path / "ticks.c"
    code.write_text(TICKS_C)
    pytester.syspathinsert(pytester.path)
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "ticks"]\n')
    pytester.makepyfile(
        test_t='import array\n\ndef test_sum(cbuild):\n    cbuild.library("work.c").sum(array.array("i", [1] * 8), 8)\n'
    )

    def ticks() -> int:
        out = pytester.path / "run.json"
        pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}").assert_outcomes(passed=1)
        return int(json.loads(out.read_text())["tests"]["test_t.py::test_sum"]["metrics"]["ticks"]["value"])

    once = ticks()
    assert once > 0
    code.write_text(code.read_text().replace("ticks_n += 1", "ticks_n += 1000"))
    assert ticks() == 1000 * once
    assert ticks() == 1000 * once  # and the build made again is kept


def test_plugin_a_cut_off_on_a_clock_no_block_looks_at_is_refused(pytester: pytest.Pytester) -> None:
    # The heap model keeps a clock (regions have it) but asks for no block events: nothing looked
    # at it as code ran, and stop_at_allocations let the code run on to its end or its timeout.
    pytester.makefile(
        ".c", work="#include <stdlib.h>\nint work(int n) { for (int i = 0; i < n; i++) free(malloc(8)); return n; }\n"
    )
    pytester.makepyfile(
        test_h=textwrap.dedent(
            """
            import pytest

            @pytest.mark.budget(models=["ir-count", "heap"], max_allocations=10, stop_at_allocations="2x")
            def test_allocations(cbuild):
                cbuild.library("work.c").work(1000)
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_h.py::test_allocations: budget(stop_at_allocations=...): the heap model's clock is read at region "
            "markers only, not before each block (its dynamic phase asks for no block events), so nothing can stop "
            "code at a count of allocations*"
        ]
    )


def test_a_region_limit_on_a_metric_regions_do_not_have_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # Regions have a model's clock (zk_cycles), not its other metrics: the limit said the test
    # "ran no region" where it had.
    pytester.makefile(".c", work=SUM_C)
    pytester.makepyfile(
        test_r=textwrap.dedent(
            """
            import pytest

            @pytest.mark.budget(models=["ir-count", "zkvm"], regions={"loop": {"max_zkuser_cycles": 10}})
            def test_sum(cbuild):
                cbuild.library("work.c")
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_r.py::test_sum: budget(regions={'loop': {'max_zkuser_cycles': ...}}): regions are measured in the "
            "zkvm model's clock, zk_cycles, not in zk_user_cycles; limit the region's zk_cycles (max_zkcycles)*"
        ]
    )


def test_evaluate_must_give_one_cost_per_metric() -> None:
    """A metric left out would read 0 and pass its limit; two of one would be summed."""

    class Two(CostModel):
        name = "two"
        metrics = (Metric("two_a", "a", "max_two_a"), Metric("two_b", "b", "max_two_b"))

    model = Two()
    assert checked_costs(model, [Cost("two_b", 1), Cost("two_a", 2)]) == [Cost("two_b", 1), Cost("two_a", 2)]
    assert checked_costs(model, [], unavailable=True) == []
    for wrong in ([Cost("two_a", 1)], [Cost("two_a", 1), Cost("two_a", 1)], [Cost("two_a", 1), Cost("other", 1)], []):
        with pytest.raises(ModelError, match=r"cost model 'two': evaluate returned costs of .*; expected one of each"):
            checked_costs(model, wrong)
