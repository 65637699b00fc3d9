"""Metrics and statistics on polars frames. Never imports environments or agents:
it reads datasets only, so it works on other people's runs too.

Layout: one core and one package per environment.

- core: :mod:`.stats` (every interval method, with the coverage that justifies it;
  undefined values are :class:`scarce_lab.undefined.Undefined`, a NaN with its reason),
  :mod:`.pooling` (the never-pool check and the one :class:`~.pooling.PoolingError`),
  :mod:`.figures` (charts and table writers), :mod:`.charts` (interval charts of
  result frames), :mod:`.saydo` (say against do: what every environment's comparisons
  share), :mod:`.labels` (condition labels),
  :mod:`.comparisons` (multiple-comparison families), :mod:`.llm_outcomes` (what
  became of the model's decisions, any environment), :mod:`.findings` (a finding that
  shows and saves itself), :mod:`.layout` and :mod:`.readings` (its table and sentence),
  :mod:`.crossplay` (focal/background compositions);
- ``scarce_lab.environments.<name>.analysis``: each environment's metrics, charts and
  sentences; its ``__init__`` is the public face (``sl.sovsim``, ``sl.scarce``,
  ``sl.economy``), the names a notebook uses.
"""
