"""Metrics and statistics on polars frames. Never imports environments or agents:
it reads datasets only, so it works on other people's runs too."""
