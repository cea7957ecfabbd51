"""Imports of topics from outside: the reference page (:mod:`.reference`), OpenAlex's and arXiv's
taxonomies (:mod:`.taxonomies`, rules from names in :mod:`.names`) and the demo taxonomy
(:mod:`.demo`)."""
