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


def test_float_noise_neither_refuses_nor_skews_a_reachable_total() -> None:
    """Found in review: running sums lost a small source's weight next to a capped large one
    (temperature below 1), and a total of exactly every cap was refused by one rounding."""
    skewed = {"big": 10_000, "small": 100}
    expected = plan_mix(skewed, total=12_000, temperature=0.1, max_epochs={"big": 1}).shares
    assert target_shares(skewed, total=12_000, temperature=0.1, max_epochs={"big": 1}) == (
        pytest.approx(expected)
    )
    three = target_shares(
        {"a": 10**6, "b": 100, "c": 100}, total=2_000_000, temperature=0.25, max_epochs={"a": 1}
    )
    assert three == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.25})
    exact = {"s0": 100, "s1": 1, "s2": 3, "s3": 3}
    shares = target_shares(exact, total=214, temperature=3.0, max_epochs=2)
    assert shares == pytest.approx({s: n / 107 for s, n in exact.items()})
    # the planner had the same rounding: every row once under a cap of one epoch was refused
    assert plan_mix({"s0": 975, "s1": 698}, total=1673, max_epochs=1).rates == {
        "s0": 1.0,
        "s1": 1.0,
    }


def test_unreachable_totals_and_empty_train_are_refused() -> None:
    with pytest.raises(ShareError, match="max_epochs"):
        target_shares({"a": 10, "b": 10}, total=100, max_epochs=2)
    with pytest.raises(ShareError, match="nothing to draw"):
        target_shares({"a": 0})


def test_shares_agree_with_the_planner_on_random_settings() -> None:
    """Temperatures below 1 (weights far apart), fractional and whole caps, totals at every
    cap exactly."""
    rng = random.Random(5)
    checked = capped = refused = 0
    for _ in range(3_000):
        sources = [f"s{i}" for i in range(rng.randint(1, 6))]
        available = {s: rng.choice([0, 1, 7, rng.randint(1, 10**6)]) for s in sources}
        settings: dict = {"temperature": rng.choice([1.0, 0.5, 2.0, 7.3, 0.25, 0.1])}
        if rng.random() < 0.6:
            settings["total"] = rng.randint(1, 4 * sum(available.values()) + 1)
        if rng.random() < 0.5:
            settings["max_epochs"] = rng.choice(
                [
                    rng.uniform(1, 4),
                    rng.randint(1, 3),
                    {s: rng.uniform(1, 3) for s in sources if rng.random() < 0.5},
                ]
            )
            if isinstance(settings["max_epochs"], int) and rng.random() < 0.5:
                # every row drawn exactly max_epochs times: the total at every cap
                settings["total"] = settings["max_epochs"] * sum(available.values())
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
