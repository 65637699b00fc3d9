"""A fourth environment that lives in the tests only: a two-agent counter game.

It proves that adding an environment is one package and one registration
(:func:`scarce_lab.registry.register` of :data:`tests.toy_env.spec.SPEC`), with no
edit to any shared module: ``tests/test_toy_environment.py`` runs it, records it,
loads it back, builds its tables, views it and passes the conformance suite.

- :mod:`.world`: the pure game (no I/O), seeded.
- :mod:`.spec`: its config, payload model, runner, tidy table, paper table,
  conformance play and viewer renderer, gathered in one ``EnvironmentSpec``.
"""
