"""The network simulator (issue 16): the shipped pure cores over simulated time and links."""
