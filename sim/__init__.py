"""The network simulator: the shipped pure cores over simulated time and links."""
