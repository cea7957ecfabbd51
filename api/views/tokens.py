"""``tokens/``: the HTML page where a signed-in user creates and revokes API tokens, through
``api.services``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from ..forms import TokenCreateForm
from ..models import ApiToken
from ..services import TokenLimitReached, token_create, token_revoke

# The ids of the token forms this session has sent (the last 20), never the keys.
TOKEN_FORMS_SESSION_KEY = "api-token-forms-sent"


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    """``GET``: the user's API tokens (name, first characters, created, last used, revoked) and
    a form to create one. ``POST`` (``name``): create a token and show its full key, this once:
    the key is in this response only (never stored, never cached, never redirected with)."""
    created = None
    if request.method == "POST":
        form = TokenCreateForm(request.POST)
        if form.is_valid():
            once = form.cleaned_data["once"]
            once = str(once) if once else None
            submitted = request.session.get(TOKEN_FORMS_SESSION_KEY, [])
            if once is not None and once in submitted:
                # The same form again (a reload): its token exists and its key was shown.
                messages.info(
                    request,
                    "That form was already sent: its token was created and its key shown once "
                    "(reloading cannot show it again). Revoke it below if the key was lost.",
                )
                form = TokenCreateForm()
            else:
                try:
                    created = token_create(user=request.user, name=form.cleaned_data["name"])
                except TokenLimitReached as error:
                    form.add_error(None, str(error))
                else:
                    if once is not None:
                        request.session[TOKEN_FORMS_SESSION_KEY] = [*submitted, once][-20:]
                    form = TokenCreateForm()
    else:
        form = TokenCreateForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(
        request,
        "api/tokens.html",
        {"form": form, "tokens": tokens, "created": created},
    )


@login_required
@require_POST
def token_revoke_view(request, pk: int):
    """``POST``: revoke one of the user's tokens, then back to the page. Another user's token,
    or none with this id: 404."""
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: it no longer works.")
    return redirect("api:tokens")
