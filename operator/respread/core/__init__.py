"""Slim immutable records, the Filter kernel, selectors, quantities, bounds, annotation names."""
