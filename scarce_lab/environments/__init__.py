"""The shipped environments, each one registered :class:`scarce_lab.registry.EnvironmentSpec`.

Every module of this package registers one environment on import;
:func:`scarce_lab.registry.load` imports them all (without naming them). A new
environment shipped with scarce_lab is one module here; one from another package
declares an entry point instead (see :mod:`scarce_lab.registry`).

Each spec wires what already exists in the layers (config model, runner, payload
models, tables, analysis, conformance play, viewer, CLI); heavy modules (the runners,
the model client, analysis) are imported when a function is called, not when the
spec is registered, so the CLI and ``import scarce_lab`` stay quick.
"""
