"""Conformance with each institution on: the same seed gives the same trajectory, no
private message, contract or other worker's private state reaches an agent it should
not (reputation is public by design), and the harness really exercises them."""

from __future__ import annotations

import json

import pytest

from scarce_lab.environments.scarce.conformance import scarce_trace
from scarce_lab.environments.scarce.world import InstitutionRules
from scarce_lab.testing import Observation, check_environment, check_privacy

MODULES = {
    "sanctions-mechanism": InstitutionRules(sanctions="mechanism", fine=7, fine_to="harmed"),
    "sanctions-vote": InstitutionRules(sanctions="vote", fine=7),
    "reputation": InstitutionRules(reputation=True),
    "contracts": InstitutionRules(contracts=True, max_contract=50),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_scarce_conforms_with_each_institution(name):
    check_environment(lambda seed: scarce_trace(seed, institutions=MODULES[name]))


def test_the_institutions_are_exercised_and_a_contract_leak_is_caught():
    t = scarce_trace(0, institutions=InstitutionRules(sanctions="vote", fine=7, reputation=True, contracts=True,
                                                      max_contract=50))
    kinds = [o[0] for o in t.outcomes if isinstance(o, tuple)]
    assert "contracts" in kinds and "sanction" in kinds
    texts = [o.text for o in t.observations]
    assert any('"reputation"' in x for x in texts) and any('"your_contracts": [{' in x for x in texts)
    assert any('"breach"' in x for x in texts)  # voters were shown a breach
    # a view that shows someone else's contract is flagged
    i = next(i for i, o in enumerate(t.observations) if '"your_contracts": [{' in o.text)
    o = t.observations[i]
    view = json.loads(o.text)
    k = view["contention"]["your_contracts"][0]
    stranger = next(w for w in ("w0", "w1", "w2") if w not in (k["payer"], k["payee"]))
    from scarce_lab.environments.scarce.conformance import _scarce_leaks

    leaks = _scarce_leaks(stranger, view, o.text, {w: -1 for w in ("w0", "w1", "w2")}, [])
    assert any(x.startswith("contract ") for x in leaks)

    def leaky(seed):
        tr = scarce_trace(seed, institutions=MODULES["contracts"])
        tr.observations[i] = Observation(stranger, o.text, tuple(leaks), o.own)
        return tr

    with pytest.raises(AssertionError, match="sees contract"):
        check_privacy(leaky)
