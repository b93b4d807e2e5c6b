"""The lesson service's parts, one per concern; ``node/lessons/service.py`` composes them."""
