"""respread: keeps Pod Topology Spread Constraints true after the fact."""

__version__ = "0.1.0"
