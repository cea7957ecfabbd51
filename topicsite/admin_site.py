"""The admin site: staff, and members of the "Curators" group, may enter.

Putting a person in the Curators group is enough to let them work in ``/admin/``: no one has
to tick "Staff status" as well. Chosen over a signal that sets ``is_staff`` when the group is
added (``m2m_changed``) because nothing is stored: taking someone out of the group, or
deleting the group (which sends no ``m2m_changed``), shuts the door at once, and a staff flag
set for another reason is never cleared by mistake. What a curator may do inside is still the
group's permissions (``topics/migrations/0003_curators_group.py``).

Staff and curators log in on allauth's page, as allauth documents (``secure_admin_login``): its
rate limits then cover the admin too, whose own form had none. Signed in but neither staff
nor curator: 403.
"""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.views.defaults import permission_denied

# The group made by topics/migrations/0003_curators_group.py (named here: the kernel imports
# no app).
CURATORS_GROUP = "Curators"


def admin_entry_allowed(user) -> bool:
    """Whether ``user`` may enter the admin: active, and staff or in :data:`CURATORS_GROUP`.
    One query for an active user who is not staff, none otherwise."""
    if not (user.is_authenticated and user.is_active):
        return False
    return user.is_staff or user.groups.filter(name=CURATORS_GROUP).exists()


class TopicsiteAdminSite(admin.AdminSite):
    """Django's admin site, entered by staff and by the Curators group
    (:func:`admin_entry_allowed`)."""

    # The app list on every page took a quarter of a 1280 px screen from the change lists (the
    # review queue's score and decide columns scrolled out of sight); the admin's home page
    # and the breadcrumbs lead to the same places.
    enable_nav_sidebar = False

    def has_permission(self, request):
        return admin_entry_allowed(request.user)

    def login(self, request, extra_context=None):
        """Anonymous: to allauth's log-in page with ``next``. Signed in and allowed: Django's
        (which goes on to the admin). Signed in, not allowed: 403."""
        if not request.user.is_authenticated:
            return secure_admin_login(super().login)(request, extra_context)
        if not self.has_permission(request):
            # The 403 page itself, not ``raise PermissionDenied``: Django logs a raised one
            # with its traceback, and a reader who follows a link to /admin/ is not an error.
            return permission_denied(request, PermissionDenied("Staff and curators only."))
        return super().login(request, extra_context)
