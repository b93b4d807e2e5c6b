"""The node's health report (Lamarckian memory "Measuring Evolutionary Fitness", "External Validity
Metrics" and its health dashboard): pure figures over what the node stores.

``params.py`` holds every window and threshold, ``inputs.py`` the values the report reads
(predictions, external validations), ``report.py`` the pure ``health_report``, ``render.py``
its plain-text, JSON and gauge renderings. No I/O here: the node's operator API, CLI and
metrics read the store and call these.
"""
