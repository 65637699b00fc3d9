"""Adapters from published trajectory layouts (SovSim release and run files, GovSim
runs) to our tidy tables. Each adapter reads the run configuration the original tool
writes, so that a run's condition is every setting that defines it."""


class ForcedDataWarning(UserWarning):
    """A data check was overridden with ``force=True`` (mixed layouts, a run without
    its configuration, ...): the numbers may mix what would otherwise be kept apart.
    The CLI prints these to stderr, in bold red (``forced``)."""

    forced = True
