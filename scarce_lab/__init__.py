"""scarce_lab: LLM agents under economic rules.

Three environments (SCARCE slot auctions, Economy of Minds, SovSim commons), one
trajectory format, loaders that return polars frames, and metrics with confidence
intervals. See README.md and the numbered notebooks.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scarce-lab")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.1.0"

__all__ = ["__version__"]
