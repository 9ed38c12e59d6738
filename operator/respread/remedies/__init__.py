"""The three remedies (evict, cost, surge), each in its own package, and the chooser among them."""
