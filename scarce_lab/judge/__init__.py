"""LLM-as-judge for negotiation behaviour: taxonomies as data, a K-judge panel with
majority arbitration, agreement statistics, validation against expert labels,
institutional flags and language-drift measures.

Typical use (a notebook)::

    from scarce_lab.judge import load_taxonomy, units_from_path, make_judges, label_units
    tax = load_taxonomy("scarce")
    units = units_from_path("data/scarce")
    res = label_units(units, tax, make_judges(["openai/gpt-4o", "anthropic/claude-...", "embedded/smollm2"]),
                      out_dir="labels/scarce")
    res.labels      # one row per (run_id, round, agent): accepted labels, ties, judges without a rating

Modules: :mod:`.taxonomy`, :mod:`.units`, :mod:`.panel` (runner), :mod:`.judges`,
:mod:`.answer`, :mod:`.judging`, :mod:`.store` (durable files), :mod:`.tables`, :mod:`.arbitration`, :mod:`.agreement` (with
:mod:`.stat`), :mod:`.scores`, :mod:`.validation`, :mod:`.casino`,
:mod:`.institutions`, :mod:`.drift`, :mod:`.sheets` (label sheets for human coders:
:func:`export_sheet`, :func:`import_sheet`, :func:`human_units` as the gold of
:func:`validate_panel`, :func:`coder_agreement` between coders). The LLM client (litellm) is imported only when a
panel runs.
"""

from .agreement import label_agreement
from .arbitration import Arbitration, arbitrate
from .casino import load_casino
from .drift import drift_table
from .institutions import institutional_summary, institutions
from .judges import JudgeSpec, make_judges
from .panel import PanelResult, label_units, run_panel
from .scores import score_against_gold
from .sheets import export_sheet, human_units, import_sheet
from .taxonomy import Taxonomy, load_taxonomy
from .units import Unit, units_from_frame, units_from_path
from .validation import ValidationReport, coder_agreement, validate_panel

__all__ = [
    "Arbitration",
    "JudgeSpec",
    "PanelResult",
    "Taxonomy",
    "Unit",
    "ValidationReport",
    "arbitrate",
    "coder_agreement",
    "drift_table",
    "export_sheet",
    "human_units",
    "import_sheet",
    "institutional_summary",
    "institutions",
    "label_agreement",
    "label_units",
    "load_casino",
    "load_taxonomy",
    "make_judges",
    "run_panel",
    "score_against_gold",
    "units_from_frame",
    "units_from_path",
    "validate_panel",
]
