"""The operator's console: static assets and pure page renderers.

``markup.py`` escapes and builds HTML, ``plots.py`` draws inline SVG charts from values,
``pages.py`` renders each page from plain values (a health report, score breakdowns,
quarantine rows, lessons and their events). Nothing here serves HTTP or reads the store: the
node's operator listener does, and hands these functions the values. Assets under ``static/``
ship in the wheel; no page loads anything from outside the node.
"""
