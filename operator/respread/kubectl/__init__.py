"""`kubectl respread`: the kubectl plugin (plugin.py) and its status view (status.py)."""
