"""One-click unsubscribe from digest emails, without logging in.

GET shows what the link would do with a button (mail scanners fetch links with GET, so GET
changes nothing); POST does it. A mail client's RFC 8058 one-click POST
(``List-Unsubscribe=One-Click``) reaches the same view. The signed token is the authority, so
the POST needs no CSRF token.
"""

from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from .services import digest_unsubscribe
from .tokens import UnsubscribeTokenError, unsubscribe_token_read

# An unusable link: 400 for one that is malformed, tampered with or expired; 404 for one whose
# user or follow no longer exists.
INVALID_STATUS = {"invalid": 400, "expired": 400, "gone": 404}


@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str):
    """``/digests/unsubscribe/<token>/``: GET asks to confirm turning digests off for the
    token's follow (or all the user's follows), POST turns them off and says which. An unusable
    token gets ``digests/unsubscribe_invalid.html`` with status 400 or 404, never an error."""
    try:
        target = unsubscribe_token_read(token=token)
    except UnsubscribeTokenError as error:
        return render(
            request,
            "digests/unsubscribe_invalid.html",
            {"reason": error.reason, "message": str(error)},
            status=INVALID_STATUS[error.reason],
        )
    if request.method == "GET":
        return render(request, "digests/unsubscribe_confirm.html", {"target": target})
    follows = digest_unsubscribe(target=target)
    return render(request, "digests/unsubscribe_done.html", {"target": target, "follows": follows})
