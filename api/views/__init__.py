"""Views of ``/api/v1/``, one module per resource (papers, topics, categories, search, follows,
assignments, tokens, ask); ``base`` holds what several share. Authentication, permissions and
throttles come from the ``REST_FRAMEWORK`` defaults (see ``api.authentication`` /
``api.throttling``); ``api.urls`` wires the routes."""
