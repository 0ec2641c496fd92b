"""Seeds as statistics in the report: grouped rows, mean ± sd cells, paired differences, plots."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from rlvr.report import _curve_runs, build_report
from rlvr.reporting.plots import mean_series
from rlvr.reporting.seeds import Stat, group_results, paired_difference, split_seed
from rlvr.reporting.tables import infer_role, load_results, score

BENCH = {"math": "micro_math", "instruction": "micro_instruction"}
# label stem -> per seed {domain: avg_at_k}. math: mixed beats its best merge (average) by far
# more than the seed spread; instruction: the best merge (ties) is within the spread of mixed.
SCORES = {
    "math": {0: {"math": 0.55, "instruction": 0.20}, 1: {"math": 0.58, "instruction": 0.24}},
    "instruction": {
        0: {"math": 0.10, "instruction": 0.70},
        1: {"math": 0.14, "instruction": 0.62},
    },
    "mixed": {0: {"math": 0.60, "instruction": 0.50}, 1: {"math": 0.62, "instruction": 0.70}},
    "average": {0: {"math": 0.40, "instruction": 0.55}, 1: {"math": 0.41, "instruction": 0.45}},
    "ties": {0: {"math": 0.30, "instruction": 0.52}, 1: {"math": 0.50, "instruction": 0.60}},
}
UNSEEDED = {"base": {"math": 0.05, "instruction": 0.10}, "sft": {"math": 0.20, "instruction": 0.30}}
METHOD = {"average": "linear", "ties": "ties"}
COST = {"math": 30.0, "instruction": 50.0, "mixed": 45.0}  # + seed: each run costs a bit more
MERGE_COST = {"average": 2.0, "ties": 3.0}


def write_model(study: Path, label: str, scores: dict[str, float], info: dict) -> None:
    """What rlvr.evaluate leaves: model.json and one summary per benchmark."""
    folder = study / "eval" / label
    folder.mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps({"label": label, **info}))
    for domain, value in scores.items():
        summary = {
            "model": label,
            "benchmark": BENCH[domain],
            "domain": domain,
            "prompts": 8,
            "k": 4,
            "avg_at_k": value,
            "pass_at_k": min(1.0, 1.5 * value),
            "pass_at_1": value,
            "greedy_accuracy": value,
        }
        (folder / f"{BENCH[domain]}.json").write_text(json.dumps(summary))


def write_run(root: Path, label: str, domains: list[str], cost: float) -> Path:
    run = root / "runs" / label
    run.mkdir(parents=True)
    compute = {"device_seconds": cost, "wall_s": cost, "processes": 1}
    (run / "summary.json").write_text(json.dumps({"domains": domains, "compute": compute}))
    with (run / "metrics.jsonl").open("w") as fh:
        for step in range(1, 4):
            rec = {"step": step, **{f"rewards/reward_{d}/mean": step * cost / 100 for d in domains}}
            fh.write(json.dumps(rec) + "\n")
    return run


def write_study(root: Path, scores: dict, unseeded: dict) -> Path:
    for label, per in unseeded.items():
        write_model(root, label, per, {"path": label})
    for stem, by_seed in scores.items():
        for seed, per in by_seed.items():
            label = stem if seed is None else f"{stem}-seed{seed}"
            if stem in METHOD:
                folder = root / "merges" / label
                folder.mkdir(parents=True)
                merge = {"name": stem, "mergekit_method": METHOD[stem]}
                cost = {"device_seconds": MERGE_COST[stem], "seconds": MERGE_COST[stem]}
                (folder / "merge.json").write_text(json.dumps({**merge, **cost}))
                write_model(root, label, per, {"path": str(folder), "merge": merge})
                continue
            domains = list(BENCH) if stem == "mixed" else [stem]
            run = write_run(root, label, domains, COST[stem] + (seed or 0))
            info = {"path": str(run / "final"), "run_dir": str(run), "domains": domains}
            write_model(root, label, per, info)
    return root


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = write_study(tmp_path_factory.mktemp("seeded"), SCORES, UNSEEDED)
    build_report(root)
    return root


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open() as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def pct(stem: str, domain: str) -> list[float]:
    return [100 * per[domain] for per in SCORES[stem].values()]


def pct_avg(stem: str) -> list[float]:
    return [100 * statistics.mean(per.values()) for per in SCORES[stem].values()]


def md_row(study: Path, table: str, first: str) -> list[str]:
    for line in (study / "report" / f"{table}.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in {table}.md")


def pm(values: list[float]) -> str:
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def test_split_seed_and_grouping_keep_per_seed_values(study):
    assert split_seed("ties-seed12") == ("ties", 12)
    assert split_seed("sft") == ("sft", None) and split_seed("seed3") == ("seed3", None)
    groups = group_results(load_results(study))
    assert [(g.label, g.role, g.n) for g in groups] == [
        ("base", "base", 1),
        ("sft", "sft", 1),
        ("math", "expert", 2),
        ("instruction", "expert", 2),
        ("average", "merge", 2),
        ("ties", "merge", 2),
        ("mixed", "mixed", 2),
    ]
    ties = groups[5]
    assert ties.labels == ("ties-seed0", "ties-seed1")
    assert ties.values(score, "micro_math", "avg_at_k") == pytest.approx(
        {s: 100 * per["math"] for s, per in SCORES["ties"].items()}
    )


def test_roles_ignore_the_seed_suffix():
    assert infer_role("math-seed3", {}, {}) == "expert"
    assert infer_role("ties-seed0", {}, {}) == "merge"
    assert infer_role("mixed-seed1", {}, {}) == "mixed"
    assert infer_role("odd-seed1", {}, {"odd": "expert"}) == "expert"
    assert infer_role("odd-seed1", {}, {"odd": "expert", "odd-seed1": "merge"}) == "merge"


def test_main_table_shows_mean_sd_and_seeds(study):
    columns, rows = read_csv(study / "report" / "main_table.csv")
    assert columns == [
        "model",
        "role",
        "seeds",
        "math/micro_math",
        "math/micro_math sd",
        "instruction/micro_instruction",
        "instruction/micro_instruction sd",
        "avg",
        "avg sd",
    ]
    by = {r["model"]: r for r in rows}
    assert [(r["model"], r["seeds"]) for r in rows][:3] == [
        ("base", "1"),
        ("sft", "1"),
        ("math", "2"),
    ]
    for stem in SCORES:
        row = by[stem]
        for domain, bench in BENCH.items():
            col = f"{domain}/{bench}"
            assert float(row[col]) == pytest.approx(statistics.mean(pct(stem, domain)))
            assert float(row[f"{col} sd"]) == pytest.approx(statistics.stdev(pct(stem, domain)))
        assert float(row["avg"]) == pytest.approx(statistics.mean(pct_avg(stem)))
        assert float(row["avg sd"]) == pytest.approx(statistics.stdev(pct_avg(stem)))
        cells = md_row(study, "main_table", stem)
        assert cells[2] == "2"
        assert cells[3:] == [pm(pct(stem, "math")), pm(pct(stem, "instruction")), pm(pct_avg(stem))]
    assert by["sft"]["math/micro_math sd"] == "" and by["base"]["avg sd"] == ""
    sft = md_row(study, "main_table", "sft")
    assert sft[3] == f"{100 * UNSEEDED['sft']['math']:.2f}" and "±" not in "".join(sft)


def test_merge_table_mean_sd_per_domain(study):
    columns, rows = read_csv(study / "report" / "merge_table.csv")
    assert columns[:3] == ["merge", "mergekit method", "seeds"]
    assert [(r["merge"], r["mergekit method"], r["seeds"]) for r in rows] == [
        ("average", "linear", "2"),
        ("ties", "ties", "2"),
    ]
    for r in rows:
        for domain in BENCH:
            assert float(r[domain]) == pytest.approx(statistics.mean(pct(r["merge"], domain)))
            assert float(r[f"{domain} sd"]) == pytest.approx(statistics.stdev(pct(r["merge"], domain)))
        cells = md_row(study, "merge_table", r["merge"])
        assert cells[3:5] == [pm(pct(r["merge"], "math")), pm(pct(r["merge"], "instruction"))]


def expected_diff(domain: str) -> tuple[str, list[float]]:
    """The best merge by mean and the paired per-seed differences mixed - that merge."""
    values = (lambda s: pct_avg(s)) if domain == "avg" else (lambda s: pct(s, domain))
    best = max(METHOD, key=lambda m: statistics.mean(values(m)))
    return best, [m - b for m, b in zip(values("mixed"), values(best), strict=True)]


def test_diff_table_pairs_seeds_and_says_whether_it_exceeds_the_spread(study):
    columns, rows = read_csv(study / "report" / "diff_table.csv")
    assert columns[-4:] == [
        "mixed - best merge",
        "mixed - best merge sd",
        "n",
        "exceeds seed spread",
    ]
    by = {r["domain"]: r for r in rows}
    verdicts = {}
    for domain in ("math", "instruction", "avg"):
        best, diffs = expected_diff(domain)
        row = by[domain]
        assert row["best merge"] == best
        assert float(row["mixed - best merge"]) == pytest.approx(statistics.mean(diffs))
        assert float(row["mixed - best merge sd"]) == pytest.approx(statistics.stdev(diffs))
        assert row["n"] == "2"
        exceeds = abs(statistics.mean(diffs)) > statistics.stdev(diffs)
        assert row["exceeds seed spread"] == ("yes" if exceeds else "no")
        verdicts[domain] = row["exceeds seed spread"]
        assert md_row(study, "diff_table", domain)[4] == pm(diffs)
    assert verdicts["math"] == "yes" and verdicts["instruction"] == "no"  # both cases built


def test_one_seed_and_no_pairing_verdicts(tmp_path):
    scores = {
        "mixed": SCORES["mixed"],
        "ties": {1: SCORES["ties"][1]},  # one common seed
        "average": {None: {"math": 0.55, "instruction": 0.40}},  # no common seed at all
    }
    write_study(tmp_path, scores, {})
    build_report(tmp_path)
    by = {r["domain"]: r for r in read_csv(tmp_path / "report" / "diff_table.csv")[1]}
    assert by["math"]["best merge"] == "average"
    assert by["math"]["exceeds seed spread"] == "no pairing"
    mixed_mean = statistics.mean(pct("mixed", "math"))
    assert float(by["math"]["mixed - best merge"]) == pytest.approx(mixed_mean - 55.0)
    assert by["instruction"]["best merge"] == "ties"
    assert by["instruction"]["exceeds seed spread"] == "one seed"
    one = 100 * (SCORES["mixed"][1]["instruction"] - SCORES["ties"][1]["instruction"])
    assert float(by["instruction"]["mixed - best merge"]) == pytest.approx(one)
    assert by["instruction"]["n"] == "1" and by["instruction"]["mixed - best merge sd"] == ""


def test_paired_difference_and_stat_cells():
    assert paired_difference({0: 3.0, 1: 4.0}, {0: 1.0, 1: 1.0})[1] == "yes"
    assert paired_difference({0: 3.0, 1: 1.0}, {0: 1.0, 1: 2.0})[1] == "no"
    assert paired_difference({}, {0: 1.0}) == (Stat(None), None)
    assert Stat.of([1.0, None, 3.0]) == Stat(2.0, statistics.stdev([1.0, 3.0]), 2)
    assert Stat.of([2.5]).text() == "2.50" and Stat.of([]).text() == "–"
    assert Stat(23.1, 1.2, 2).text() == "23.10 ± 1.20"


def test_cost_table_sums_every_seed(study):
    _, rows = read_csv(study / "report" / "cost_table.csv")
    by = {r["run"]: r for r in rows}
    per_run = [f"{stem}-seed{s}" for stem in SCORES for s in SCORES[stem]]
    assert set(per_run) <= set(by)
    best = max(METHOD, key=lambda m: statistics.mean(pct_avg(m)))
    experts = sum(COST[stem] + s for stem in ("math", "instruction") for s in SCORES[stem])
    separate = experts + MERGE_COST[best] * len(SCORES[best])
    mixed = sum(COST["mixed"] + s for s in SCORES["mixed"])
    assert float(by["separate (experts + merge)"]["device_seconds"]) == pytest.approx(separate)
    assert float(by["mixed (total)"]["device_seconds"]) == pytest.approx(mixed)
    assert float(by["mixed / separate"]["device_seconds"]) == pytest.approx(mixed / separate)
    text = (study / "report" / "cost_table.md").read_text()
    assert f"merge {best} (2 runs)" in text and "2 seed(s) (0, 1) in the mixed arm" in text


def test_the_heatmap_shows_each_model_minus_sft_and_curves_use_the_domains_samples(study, tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    from rlvr.reporting.plots import delta_heatmap, smooth

    shown: list = []
    original = Axes.imshow

    def spy(self, grid, *args, **kwargs):
        shown.append(grid)
        return original(self, grid, *args, **kwargs)

    monkeypatch.setattr(Axes, "imshow", spy)
    results = load_results(study)
    path = delta_heatmap(results, "avg_at_k", tmp_path / "delta.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (grid,) = shown
    groups = [g for g in group_results(results) if g.role not in ("cascade_stage", "base", "sft")]
    mixed_row = grid[[g.label for g in groups].index("mixed")]
    sft_math = 100 * UNSEEDED["sft"]["math"]
    assert mixed_row[0] == pytest.approx(statistics.mean(pct("mixed", "math")) - sft_math)
    assert (study / "report" / "difference_to_sft.png").read_bytes()[:4] == b"\x89PNG"
    assert (study / "report" / "reward_curves.png").read_bytes()[:4] == b"\x89PNG"
    mixed, experts = _curve_runs(results, {})
    assert [Path(d).name for d in mixed["mixed"]] == ["mixed-seed0", "mixed-seed1"]
    assert [Path(d).name for d in experts["math"]] == ["math-seed0", "math-seed1"]
    assert mean_series([([1, 2, 3], [1.0, 2.0, 3.0]), ([3, 4], [4.0, 5.0])]) == ([2.0, 3.0], [2.5, 3.5])
    assert smooth([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]


def test_a_reward_curve_runs_on_the_domains_completions_seen(tmp_path):
    from rlvr.reporting.plots import reward_series

    rows = [
        {"step": 1, "math/count": 8, "rewards/reward_math/mean": 0.1},
        {"step": 2, "math/count": 4, "rewards/reward_math/mean": 0.3},
        {"step": 3, "rewards/reward_math/mean": 0.2},  # no count logged: the domain drew none
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert reward_series(tmp_path, "math") == ([8.0, 12.0, 12.0], [0.1, 0.3, 0.2])
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 5, "rewards/reward_math/mean": 0.5}))
    assert reward_series(tmp_path, "math") == ([5.0], [0.5])  # no counts at all: steps


def test_single_seed_study_has_no_seed_columns(tmp_path):
    scores = {stem: {None: by_seed[0]} for stem, by_seed in SCORES.items()}
    write_study(tmp_path, scores, UNSEEDED)
    build_report(tmp_path)
    for table in ("main_table", "merge_table", "diff_table"):
        columns, _ = read_csv(tmp_path / "report" / f"{table}.csv")
        assert not {"seeds", "n", "exceeds seed spread"} & set(columns)
        assert not any(c.endswith(" sd") for c in columns)
        assert "±" not in (tmp_path / "report" / f"{table}.md").read_text()
    _, rows = read_csv(tmp_path / "report" / "diff_table.csv")
    math_row = next(r for r in rows if r["domain"] == "math")
    best = max(METHOD, key=lambda m: SCORES[m][0]["math"])
    assert math_row["best merge"] == best
    expected = 100 * (SCORES["mixed"][0]["math"] - SCORES[best][0]["math"])
    assert float(math_row["mixed - best merge"]) == pytest.approx(expected)
