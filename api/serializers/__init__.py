"""Serializers of ``/api/v1/``, one module per resource (papers, search, topics, categories,
follows, assignments, ask); ``base`` holds the pieces several share."""
