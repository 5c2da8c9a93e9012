"""A recipe's plan: its claims files loaded, validated and hashed; the retention claims as data;
runs recording the plan they were made under; a report whose plan changed deciding nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from esbench.analysis.claims.plan import (
    EMPTY_PLAN_HASH,
    PlanError,
    check_plan,
    load_plan,
    plan_of_recipe,
)
from esbench.analysis.claims.retention import RETENTION_CLAIM_KEYS, RETENTION_CLAIMS, load_retention_claims
from esbench.analysis.claims.verdicts import (
    CONTRADICTED,
    NOT_DECIDED,
    SUPPORTED,
    VERDICTS,
    decide,
    plan_changed,
)
from esbench.analysis.verdicts import Verdict
from esbench.recipes import load_recipes
from esbench.tracking.store import RunStore
from esbench.utils.resources import experiments_dir

SHIPPED = experiments_dir() / "claims" / "retention.yaml"


def _recipe_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_hash_names_each_files_path_and_bytes_and_not_their_order(tmp_path: Path) -> None:
    d = _recipe_dir(tmp_path, {"claims/a.yaml": "x: 1\n", "claims/b.csv": "claim,limit\nc,10\n"})
    plan = load_plan("r", ["claims/a.yaml", "claims/b.csv"], d)
    assert [f.name for f in plan.files] == ["claims/a.yaml", "claims/b.csv"]
    assert load_plan("r", ["claims/b.csv", "claims/a.yaml"], d).hash == plan.hash
    assert load_plan("r", ["claims/a.yaml"], d).hash != plan.hash  # a file fewer
    (d / "claims" / "a.yaml").write_text("x: 2\n")
    assert load_plan("r", ["claims/a.yaml", "claims/b.csv"], d).hash != plan.hash  # one byte edited
    shutil.copy(d / "claims" / "a.yaml", d / "claims" / "c.yaml")
    renamed = load_plan("r", ["claims/c.yaml", "claims/b.csv"], d)
    assert renamed.hash != load_plan("r", ["claims/a.yaml", "claims/b.csv"], d).hash  # same bytes, renamed
    assert load_plan("r", None, d).hash == EMPTY_PLAN_HASH and load_plan("r", None, d).files == ()


@pytest.mark.parametrize(
    ("claims", "files", "message"),
    [
        ("claims/a.yaml", {}, "must be a list of claims files"),
        (["claims/a.yaml", "claims/a.yaml"], {"claims/a.yaml": "x: 1\n"}, "names a file twice"),
        (["claims/missing.yaml"], {}, "no such claims file"),
        (["claims/a.txt"], {"claims/a.txt": "x"}, "a claims file is .yaml, .yml, .csv"),
        (["claims/a.yaml"], {"claims/a.yaml": "x: [1\n"}, "not valid YAML"),
        (["claims/a.yaml"], {"claims/a.yaml": "- 1\n"}, "a claims YAML file is a mapping"),
        (["claims/a.csv"], {"claims/a.csv": "claim,limit\n"}, "needs a header and at least one row"),
        (["/etc/passwd.yaml"], {}, "relative to the recipe's directory"),
        (["../a.yaml"], {}, "relative to the recipe's directory"),
    ],
)
def test_a_bad_claims_file_fails_naming_the_recipe_the_file_and_what_is_allowed(
    tmp_path: Path, claims: object, files: dict[str, str], message: str
) -> None:
    d = _recipe_dir(tmp_path, files)
    with pytest.raises(PlanError, match=r"r\.yaml: claims") as e:
        load_plan("r", claims, d)
    assert message in str(e.value)


def test_a_recipe_with_a_bad_claims_key_fails_to_load(tmp_path: Path) -> None:
    text = (experiments_dir() / "retention.yaml").read_text()
    bad = text.replace("experiments/claims/retention.yaml", "claims/nope.yaml")
    (tmp_path / "retention.yaml").write_text(bad)
    with pytest.raises(PlanError, match=r"retention\.yaml: claims: .*nope\.yaml: no such claims file"):
        load_recipes(tmp_path)


def test_the_retention_recipes_name_the_shipped_retention_claims_and_table1_the_papers() -> None:
    recipes = load_recipes()
    assert [f.name for f in recipes["table1"].claims.files] == ["results/reference/salimans2017_claims.csv"]
    for name in ("retention", "lm_retention"):
        assert [f.name for f in recipes[name].claims.files] == ["experiments/claims/retention.yaml"]
        assert plan_of_recipe(name).hash == recipes[name].claims.hash != EMPTY_PLAN_HASH
    assert plan_of_recipe("no_such_recipe").hash == EMPTY_PLAN_HASH


def test_the_retention_claims_file_loads_every_claim_the_analysis_computes() -> None:
    assert tuple(RETENTION_CLAIMS) == RETENTION_CLAIM_KEYS
    forgets = RETENTION_CLAIMS["es_forgets_more"]
    assert (forgets.direction, forgets.limit, forgets.minimum_effect_se, forgets.correction) == (
        "below",
        0.0,
        2.0,
        "none",
    )
    assert "solve rate" in forgets.primary_measure and forgets.family and forgets.estimator
    assert forgets.cited.startswith("Abdi, Gupta et al. 2026: ")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update(direction="sideways"), "direction='sideways'; allowed: below, above"),
        (lambda c: c.update(key="es_wins"), "key='es_wins'; allowed: es_forgets_more"),
        (lambda c: c.update(correction="holm"), "correction='holm'; allowed: none"),
        (lambda c: c.update(limit="zero"), "limit='zero' must be a finite number"),
        (lambda c: c.update(minimum_effect_se=-1), "minimum_effect_se=-1 must be >= 0"),
        (lambda c: c.pop("family"), "missing ['family']"),
        (lambda c: c.update(text=""), "text must be a non-empty string"),
    ],
)
def test_a_bad_retention_claim_fails_naming_the_file_the_claim_and_the_key(
    tmp_path: Path, edit: object, message: str
) -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    edit(data["claims"][0])  # type: ignore[operator]
    path = tmp_path / "retention.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PlanError, match=r"retention.yaml: claims\[0\]") as e:
        load_retention_claims(path)
    assert message in str(e.value)


def test_a_retention_claims_file_must_hold_every_claim_once(tmp_path: Path) -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    data["claims"] = data["claims"][:3]
    path = tmp_path / "retention.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PlanError, match="must hold each of es_forgets_more"):
        load_retention_claims(path)


def test_inside_plan_changed_every_verdict_is_not_decided_and_outside_it_is_the_rules() -> None:
    assert NOT_DECIDED in VERDICTS
    with plan_changed():
        assert decide(1.0, 2.0, "above") == NOT_DECIDED
        assert decide(1.0, 2.0, "above", testable=False) == NOT_DECIDED
        assert Verdict(SUPPORTED).word == NOT_DECIDED
        with plan_changed(False):
            assert decide(1.0, 2.0, "above") == SUPPORTED
        assert decide(1.0, 2.0, "below") == NOT_DECIDED
    assert decide(1.0, 2.0, "below") == CONTRADICTED and Verdict(SUPPORTED).word == SUPPORTED


def test_a_run_keeps_the_plan_it_was_first_recorded_under(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "run-a")
    store.dir.mkdir(parents=True)
    assert store.plan_record() is None
    first, second = {"hash": "a" * 64, "files": {}}, {"hash": "b" * 64, "files": {}}
    assert store.record_plan(first) == first
    assert store.record_plan(second) == first and store.plan_record() == first


def test_a_plan_check_is_changed_when_any_run_records_another_plan_or_none() -> None:
    current = {"recipe": "r", "hash": "a" * 64, "files": {}}
    assert not check_plan(current, {"x": dict(current), "y": dict(current)}).changed
    mixed = check_plan(current, {"x": dict(current), "y": None, "z": {"hash": "b" * 64, "files": {}}})
    assert mixed.changed and mixed.count(None) == 1 and list(mixed.others()) == ["b" * 64]
    assert check_plan(None, {"x": None}).current["hash"] == EMPTY_PLAN_HASH
