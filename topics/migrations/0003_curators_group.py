"""The "Curators" group: exactly what a curator needs to work in the admin.

Curators read papers and their arXiv metadata, edit topics and their rules (no deleting: a
topic is merged away or switched off instead), decide, add, move and delete assignments, read
the history of topics and assignments, and read and retrain the classifier. Nothing of users,
groups or site settings (the beat schedules of django-celery-beat). Members also need
``is_staff`` to log in to the admin.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP_NAME = "Curators"
CURATOR_PERMISSIONS = {
    # The paper page's inlines show versions and authorships, so curators may view them too.
    "papers": [
        "view_paper",
        "view_category",
        "view_author",
        "view_paperversion",
        "view_authorship",
    ],
    "topics": [
        "view_topic",
        "add_topic",
        "change_topic",
        "view_assignment",
        "add_assignment",
        "change_assignment",
        "delete_assignment",
        "view_historicaltopic",
        "view_historicalassignment",
        # The stored classifier versions and their figures; "change" is what lets a curator
        # queue a retraining (the versions themselves are read-only in the admin).
        "view_classifiermodel",
        "change_classifiermodel",
    ],
}


def create_curators_group(apps, schema_editor):
    using = schema_editor.connection.alias
    # Permissions are normally created after every migration has run (post_migrate); create
    # these apps' now, so the group is complete on a fresh database too.
    for app_label in CURATOR_PERMISSIONS:
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=using)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = []
    for app_label, codenames in CURATOR_PERMISSIONS.items():
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label=app_label, codename__in=codenames
            )
        )
        missing = set(codenames) - {permission.codename for permission in found}
        if missing:
            raise RuntimeError(f"Permissions missing for the Curators group: {sorted(missing)}")
        permissions.extend(found)
    group, _ = Group.objects.using(using).get_or_create(name=GROUP_NAME)
    group.permissions.set(permissions)


def delete_curators_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name=GROUP_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("papers", "0001_initial"),
        ("topics", "0002_curation_history_classifier"),
    ]

    operations = [migrations.RunPython(create_curators_group, delete_curators_group)]
