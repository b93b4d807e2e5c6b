"""The pure rules that make a lesson trustworthy: evidence, attribution, confidence, scopes, caps.

Nothing here does I/O; ``lamarck.node.lessons.service`` applies these rules over a ``LessonStore``.
"""
