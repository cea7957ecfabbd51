from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class TopicsiteConfig(AppConfig):
    """The shared kernel: abstract models, the page cache, publishing tasks, Jinja2."""

    name = "topicsite"
    verbose_name = "Site"

    def ready(self):
        from .lookups import register
        from .pagecache import connect_invalidation

        register()
        connect_invalidation()


class TopicsiteAdminConfig(admin_apps.AdminConfig):
    """``django.contrib.admin`` with ``topicsite.admin_site.TopicsiteAdminSite`` as
    ``admin.site`` (staff and the Curators group enter)."""

    default = False  # named in INSTALLED_APPS; topicsite's own config stays the default
    default_site = "topicsite.admin_site.TopicsiteAdminSite"
