"""factory_boy factories for topics and assignments.

Topics are created through ``topics.services.topic_create`` when available so their
materialised ``path`` is right; ``TopicFactory`` keeps ``path`` consistent itself.
"""

import factory
from django.contrib.auth import get_user_model

from papers.tests.factories import PaperFactory
from topics.models import Assignment, Topic


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password("correct horse battery staple")


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Topic
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Topic {n}")
    slug = factory.Sequence(lambda n: f"topic-{n}")
    parent = None

    @factory.post_generation
    def _path(obj, create, extracted, **kwargs):
        obj.path = f"{obj.parent.path if obj.parent else ''}{obj.pk}/"
        if create:
            Topic.objects.filter(pk=obj.pk).update(path=obj.path)


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    paper = factory.SubFactory(PaperFactory)
    topic = factory.SubFactory(TopicFactory)
    source = Assignment.Source.RULE
    state = Assignment.State.ACCEPTED
    score = 1.0
