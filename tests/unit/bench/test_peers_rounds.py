"""bench_peers prints every round's jobs/s and ours / each perfect client round by round, with a
median."""

from __future__ import annotations

import pytest

from hack.bench_peers import report_rounds, round_ratios


def test_round_ratios_pair_the_rounds_in_order() -> None:
    assert round_ratios([90.0, 80.0, 100.0], [100.0, 100.0, 80.0]) == [0.9, 0.8, 1.25]
    assert round_ratios([90.0], [0.0]) == []  # a round with no rate has no ratio
    with pytest.raises(ValueError):
        round_ratios([1.0, 2.0], [1.0])


def test_the_rounds_report_lists_each_round_and_the_median(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report_rounds(
        {"ours": [90.0, 80.0, 100.0], "kopf": [20.0, 21.0, 22.0], "perfect": [100.0, 100.0, 80.0]}
    )
    out = capsys.readouterr().out.splitlines()
    assert out[1:4] == [
        "    ours: 90.0 80.0 100.0",
        "    kopf: 20.0 21.0 22.0",
        "    perfect: 100.0 100.0 80.0",
    ]
    assert out[4] == "    ours / perfect per round: x0.90 x0.80 x1.25 (median x0.90)"


def test_one_round_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    report_rounds({"ours": [90.0], "perfect": [100.0]})
    assert capsys.readouterr().out == ""


def test_the_perfect_clients_variant_with_events_gets_its_own_ratio_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report_rounds(
        {"ours": [90.0, 80.0], "perfect": [100.0, 100.0], "perfect-events": [90.0, 100.0]}
    )
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "    ours / perfect per round: x0.90 x0.80 (median x0.85)",
        "    ours / perfect-events per round: x1.00 x0.80 (median x0.90)",
    ]
