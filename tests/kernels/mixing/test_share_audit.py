"""The mix check's own target shares: the definition, and agreement with the stage's planner."""

import math
import random

import pytest

from corpus_platform.kernels.mixing.plan import MixError, plan_mix
from corpus_platform.kernels.mixing.share_audit import ShareError, target_shares


def test_shares_follow_the_settings_by_hand() -> None:
    available = {"code": 100, "web": 900}
    assert target_shares(available) == {"code": 0.1, "web": 0.9}
    flat = target_shares(available, temperature=1000.0)
    assert flat["code"] == pytest.approx(0.5, abs=0.002)
    assert target_shares(available, proportions={"code": 0.5, "web": 0.5}) == {
        "code": 0.5,
        "web": 0.5,
    }
    # 5,000 rows by share would want 500 code rows; two epochs of 100 cap it at 200
    capped = target_shares(available, total=5_000, max_epochs={"code": 2})
    assert capped == pytest.approx({"code": 0.04, "web": 0.96})
    assert target_shares({"code": 100, "web": 0}) == {"code": 1.0, "web": 0.0}


def test_unreachable_totals_and_empty_train_are_refused() -> None:
    with pytest.raises(ShareError, match="max_epochs"):
        target_shares({"a": 10, "b": 10}, total=100, max_epochs=2)
    with pytest.raises(ShareError, match="nothing to draw"):
        target_shares({"a": 0})


def test_shares_agree_with_the_planner_on_random_settings() -> None:
    rng = random.Random(5)
    checked = capped = refused = 0
    for _ in range(3_000):
        sources = [f"s{i}" for i in range(rng.randint(1, 6))]
        available = {s: rng.choice([0, 1, 7, rng.randint(1, 10**6)]) for s in sources}
        settings: dict = {"temperature": rng.choice([1.0, 0.5, 2.0, 7.3])}
        if rng.random() < 0.6:
            settings["total"] = rng.randint(1, 4 * sum(available.values()) + 1)
        if rng.random() < 0.5:
            settings["max_epochs"] = rng.choice(
                [rng.uniform(1, 4), {s: rng.uniform(1, 3) for s in sources if rng.random() < 0.5}]
            )
        present = {s: n for s, n in available.items() if n > 0}
        if not present:
            continue
        try:
            plan = plan_mix(present, **settings)
        except MixError as error:
            if "more repetitions" in str(error):  # not a cap on a source without rows
                with pytest.raises(ShareError):
                    target_shares(present, **settings)
                refused += 1
            continue
        shares = target_shares(present, **settings)
        assert set(shares) == set(plan.shares)
        for source, share in plan.shares.items():
            assert math.isclose(shares[source], share, rel_tol=1e-9, abs_tol=1e-12)
        checked += 1
        capped += bool(plan.capped)
    assert checked > 1_500 and capped > 100 and refused > 20
