"""The kube-scheduler oracle: main.go (Go) and build.py, which builds and caches it."""
