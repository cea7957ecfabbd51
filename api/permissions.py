"""Who may do what through the API.

Reads are open to anyone and writes need credentials (a token, or a session with its CSRF
token): DRF's ``IsAuthenticatedOrReadOnly``, the default in ``REST_FRAMEWORK``. ``me/``
resources need a signed-in user; the assignment endpoints need curator permissions: the
"Curators" group has them (``topics/migrations/0003_curators_group.py``), as do superusers and
staff given them.
Without credentials these answer 401, with credentials but without the role 403.
"""

from rest_framework.permissions import BasePermission, IsAuthenticated


class IsSignedIn(IsAuthenticated):
    """An authenticated user: for the ``me/`` resources, which are the user's own."""

    message = "This resource belongs to a signed-in user: send 'Authorization: Bearer <key>'."


class IsCurator(BasePermission):
    """An authenticated user with the topics permission the action needs.

    ``list``/``retrieve`` need ``topics.view_assignment``, ``create`` needs
    ``topics.add_assignment``, ``accept``/``reject`` need ``topics.change_assignment``.
    A method the endpoint does not offer (no action: ``PATCH`` of an assignment, ``GET`` of
    ``accept/``) is let through for a signed-in user, so that DRF answers 405 naming the method
    rather than "Only curators may…"; any other action not in the map is refused.
    """

    message = "Only curators may read or change assignments."
    permission_by_action = {
        "list": "topics.view_assignment",
        "retrieve": "topics.view_assignment",
        "create": "topics.add_assignment",
        "accept": "topics.change_assignment",
        "reject": "topics.change_assignment",
    }

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        action = getattr(view, "action", None)
        if action is None:
            return True  # no handler for this method: the view answers 405
        permission = self.permission_by_action.get(action)
        return permission is not None and user.has_perm(permission)
