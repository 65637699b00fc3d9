"""Majority arbitration on hand cases: 2 of 3, ties, unparseable judges."""

import pytest

from scarce_lab.judge.arbitration import arbitrate, default_min_votes


def test_default_min_votes_is_a_majority():
    assert [default_min_votes(k) for k in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    with pytest.raises(ValueError):
        default_min_votes(0)


def test_two_of_three():
    a = arbitrate({"j1": ["a", "b"], "j2": ["a"], "j3": ["c"]}, label_order=["a", "b", "c"])
    assert a.accepted == ("a",)
    assert a.votes == {"a": 2, "b": 1, "c": 1}
    assert a.ties == () and a.status == "ok" and a.n_valid == 3 and a.unparseable == ()


def test_repeated_label_from_one_judge_counts_once():
    a = arbitrate({"j1": ["a", "a"], "j2": [], "j3": []})
    assert a.accepted == () and a.votes == {"a": 1}


def test_unparseable_judge_does_not_vote_and_split_is_a_tie():
    a = arbitrate({"j1": ["a", "b"], "j2": None, "j3": ["a"]})
    assert a.accepted == ("a",)  # 2 of the 2 valid judges, meets 2 of 3
    assert a.ties == ("b",)  # 1-1 among two valid judges
    assert a.status == "partial" and a.unparseable == ("j2",) and a.n_valid == 2


def test_too_few_valid_judges_is_insufficient():
    a = arbitrate({"j1": ["a"], "j2": None, "j3": None})
    assert a.accepted == () and a.status == "insufficient" and a.n_valid == 1
    assert a.ties == ()  # 1 vote of 1 valid judge is not an even split


def test_even_panel_tie_is_recorded_not_accepted_by_default():
    a = arbitrate({"j1": ["a"], "j2": ["a"], "j3": [], "j4": []})
    assert a.accepted == () and a.ties == ("a",)  # needs 3 of 4
    b = arbitrate({"j1": ["a"], "j2": ["a"], "j3": [], "j4": []}, min_votes=2)
    assert b.accepted == ("a",) and b.ties == ("a",)


def test_configurable_threshold():
    answers = {"j1": ["a", "b"], "j2": ["a"], "j3": ["a", "c"]}
    assert arbitrate(answers, min_votes=1).accepted == ("a", "b", "c")
    assert arbitrate(answers, min_votes=3).accepted == ("a",)
    with pytest.raises(ValueError):
        arbitrate(answers, min_votes=0)
    with pytest.raises(ValueError):
        arbitrate({})
