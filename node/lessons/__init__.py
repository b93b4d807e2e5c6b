"""The lesson service's parts, one per concern; ``node/store/service.py`` composes them."""
