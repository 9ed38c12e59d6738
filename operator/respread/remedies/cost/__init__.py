"""pod-deletion-cost: an order for the next scale-in that keeps every hard constraint within
maxSkew."""
