"""Curators merge and split authors (the author admin's actions need "change" on authors) and
read the authors' history."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP_NAME = "Curators"
CODENAMES = ["change_author", "view_historicalauthor"]


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Permissions are normally created after every migration has run (post_migrate); create
    # papers' now, so the historical author's exist on a fresh database too.
    app_config = apps.get_app_config("papers")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0, using=using)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.using(using).filter(name=GROUP_NAME).first()
    if group is None:
        return
    found = list(
        Permission.objects.using(using).filter(
            content_type__app_label="papers", codename__in=CODENAMES
        )
    )
    missing = set(CODENAMES) - {permission.codename for permission in found}
    if missing:
        raise RuntimeError(f"Permissions missing for the Curators group: {sorted(missing)}")
    group.permissions.add(*found)


def revoke(apps, schema_editor):
    using = schema_editor.connection.alias
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.using(using).filter(name=GROUP_NAME).first()
    if group is not None:
        group.permissions.remove(
            *Permission.objects.using(using).filter(
                content_type__app_label="papers", codename__in=CODENAMES
            )
        )


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0011_author_variants_history"),
        ("topics", "0009_semantic_tagging_evidence_keywords"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
