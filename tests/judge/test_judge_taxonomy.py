"""Taxonomy files load and validate (scarce: 21 categories in two systems; casino: 10)."""

from collections import Counter

import pytest
import yaml

from scarce_lab.judge.taxonomy import TAXONOMY_DIR, available_taxonomies, load_taxonomy

SCARCE_GROUPS = {
    "classical": {"framing": 3, "concessions": 4, "coalitions": 3, "social": 3},
    "norms": {"time_urgency": 2, "scheduling": 3, "governance": 3},
}
CASINO_LABELS = {
    "small-talk",
    "self-need",
    "other-need",
    "no-need",
    "elicit-pref",
    "promote-coordination",
    "vouch-fair",
    "showing-empathy",
    "uv-part",
    "non-strategic",
}


def test_shipped_taxonomies_listed():
    assert {"scarce", "casino"} <= set(available_taxonomies())


def test_scarce_has_21_unique_ids_in_two_systems_and_every_group():
    t = load_taxonomy("scarce")
    assert len(t.ids) == 21 and len(set(t.ids)) == 21
    assert [s.id for s in t.systems] == ["classical", "norms"]
    per_system = Counter(c.system for c in t.categories)
    assert per_system == {"classical": 13, "norms": 8}
    per_group = Counter(c.group for c in t.categories)
    systems = {s.id: s for s in t.systems}
    for system, groups in SCARCE_GROUPS.items():
        assert [g.id for g in systems[system].groups] == list(groups)
        for g, n in groups.items():
            assert per_group[g] == n, g


def test_scarce_categories_are_complete_and_flagged():
    t = load_taxonomy("scarce")
    for c in t.categories:
        assert c.definition.strip() and c.example.strip(), c.id
        assert c.include and c.exclude, c.id
    # the SCARCE paper's relational group: reciprocity, alliance formation, alliance
    # loyalty, reputation (tests/analysis/test_paper_scarce.py states the definition)
    assert t.relational_ids == {
        "reciprocity",
        "explicit_coalition",
        "exclusive_coalition",
        "coalition_loyalty",
        "reputation_maintenance",
    }
    assert t.induced_ids == {"bid_priority"}
    assert {
        "bid_priority",
        "anchoring",
        "cheap_talk",
        "earliest_deadline_first",
        "sunk_cost_urgency",
        "first_come_first_served",
        "shortest_job_first",
        "risk_variance_first",
        "iterative_bargaining",
        "negotiation_neutrality",
        "issue_reduction",
        "conformity_social_proof",
        "reputation_maintenance",
        "welfare_concession",
    } <= set(t.ids)


def test_casino_ids_are_the_corpus_labels():
    t = load_taxonomy("casino")
    assert set(t.ids) == CASINO_LABELS and len(t.ids) == 10


def _raw(name="scarce"):
    return yaml.safe_load((TAXONOMY_DIR / f"{name}.yaml").read_text())


def _write(tmp_path, data):
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_duplicate_id_rejected(tmp_path):
    d = _raw()
    d["categories"][1]["id"] = d["categories"][0]["id"]
    with pytest.raises(ValueError, match="duplicate category ids"):
        load_taxonomy(_write(tmp_path, d))


def test_unknown_group_and_wrong_system_rejected(tmp_path):
    d = _raw()
    d["categories"][0]["group"] = "nope"
    with pytest.raises(ValueError, match="group 'nope' is not defined"):
        load_taxonomy(_write(tmp_path, d))
    d = _raw()
    d["categories"][0]["system"] = "norms"  # bid_priority's group 'framing' is classical
    with pytest.raises(ValueError, match="belongs to system 'classical'"):
        load_taxonomy(_write(tmp_path, d))


def test_empty_group_rejected(tmp_path):
    d = _raw()
    d["categories"] = [c for c in d["categories"] if c["group"] != "governance"]
    with pytest.raises(ValueError, match="groups with no category"):
        load_taxonomy(_write(tmp_path, d))


def test_unknown_induced_label_and_unknown_name(tmp_path):
    d = _raw()
    d["induced_by_instructions"] = [{"id": "bidding"}]
    with pytest.raises(ValueError, match="'bidding' is not a category id"):
        load_taxonomy(_write(tmp_path, d))
    with pytest.raises(FileNotFoundError, match="unknown taxonomy"):
        load_taxonomy("no_such_taxonomy")


def test_bom_and_crlf_accepted(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_bytes(b"\xef\xbb\xbf" + yaml.safe_dump(_raw("casino")).replace("\n", "\r\n").encode())
    assert load_taxonomy(p).ids == load_taxonomy("casino").ids
