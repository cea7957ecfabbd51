"""Tagging: the rule language (:mod:`.rules`), the classifier (:mod:`.classifier`), the engine
that writes machine-made assignments (:mod:`.engine`), classifier training (:mod:`.training`)
and the rule preview (:mod:`.preview`)."""
