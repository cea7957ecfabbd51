"""The PostgreSQL database backend the settings use (``ENGINE = "topicsite.postgresql"``):
Django's own, with a cheaper health check (:mod:`topicsite.postgresql.base`)."""
